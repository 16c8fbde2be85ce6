// SPDX-License-Identifier: Apache-2.0
/// `appctl console` (a sign-in link), `console sessions`, `console end [ID | --all]`.
enum ConsoleGroup {
    static let group = CommandGroup(
        name: "console", abstract: "Open the operator console in a browser: print a one-time sign-in link; list or end its sessions.",
        discussion: """
            The console is served on appd's --console-listen address (off by default; keep it on loopback, or put it behind the TLS proxy). The link works once, within \
            consoleLinkSeconds (120 by default); the browser session it opens acts as you, an admin, and ends after consoleSessionMinutes idle. Admin only.
            """,
        leaves: [ConsoleSessions.self, ConsoleEnd.self], fallback: ConsoleLink.self)
}

// SPDX-License-Identifier: Apache-2.0
/// The operator console's settings (`consoleListen`, `consoleUrl`, `consoleLinkSeconds`,
/// `consoleSessionMinutes`) and its fixed bounds.
public struct ConsoleOptions: Sendable {
    /// Where the console listens, host:port (off when nil).
    public var listen: String?
    /// The address people open, as printed in links (default: http://<listen>); an https URL
    /// (the console behind the TLS proxy) marks the cookie Secure.
    public var publicURL: String?
    /// How long a link from `appctl console` may wait to be opened.
    public var linkLifetime: Duration = .seconds(120)
    /// A session ends after this long without a request…
    public var sessionIdle: Duration = .seconds(30 * 60)
    /// …and at the latest this long after it began.
    public var sessionLifetime: Duration = .seconds(12 * 3600)
    /// Sessions open at once (a new one ends the least recently used beyond it).
    public var maxSessions = 32
    /// Links waiting to be opened at once.
    public var maxLinks = 16
    /// Event streams open at once, over all sessions.
    public var maxStreams = 16
    /// Audit lines kept in memory for the audit page.
    public var auditLines = 1000

    public init() {}

    /// Whether the cookie must only travel over TLS.
    public var secureCookie: Bool { publicURL?.hasPrefix("https://") == true }

    /// The base of links: the public URL, else the address it listens on.
    public func base(listeningOn address: String) -> String {
        var base = publicURL ?? "http://\(address)"
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}

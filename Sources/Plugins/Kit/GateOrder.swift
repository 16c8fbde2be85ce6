import Bus

/// The order gates nest in, outermost first (DESIGN §4): limits, the plugin scope (external
/// plugins' own connections), session, admin, onboarding, verified email, idempotency (keyed writes), paywall. Gates contributed by plugins are placed by name; unknown names go innermost.
public enum GateOrder {
    public static let names = ["scope", "session", "limits", "admin", "onboarding", "verifiedEmail", "idempotency", "paywall"]

    public static func sorted(_ gates: [any Gate]) -> [any Gate] {
        func rank(_ gate: any Gate) -> Int { names.firstIndex(of: gate.name) ?? names.count }
        return gates.enumerated().sorted { a, b in
            (rank(a.element), a.offset) < (rank(b.element), b.offset)
        }.map(\.element)
    }
}

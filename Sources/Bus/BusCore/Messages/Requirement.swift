// SPDX-License-Identifier: Apache-2.0
/// What a command needs before its handler may run; gates enforce these.
public enum Requirement: Hashable, Sendable, CustomStringConvertible {
    /// A valid, unexpired user session attached to the caller.
    case session
    /// The signed-in account has completed onboarding.
    case onboarded
    /// The signed-in account's email is verified (a mailed link, or a provider vouching for it).
    case verifiedEmail
    /// An active entitlement of this name (e.g. "pro").
    case entitlement(String)
    /// A metered feature: free quota per period, unlimited with the meter's entitlement.
    case meter(String)
    /// A privileged peer: the daemon's uid, root, or the admin group.
    case admin
    /// An external plugin whose manifest holds this capability (`auth.resetTokens`), or the
    /// daemon itself; no user and no admin peer has it.
    case capability(String)
    /// Not a check but a promise: the command may be sent with an idempotency key, and its
    /// first outcome is then kept and given again to a retry (the idempotency gate). Only
    /// calls that carry a key need the gate.
    case idempotent
    /// Only over a varlink connection (the control socket, a plugin's own socket): the call acts
    /// on the connection itself (`Authenticate`) or is the operator's (`io.appd.Daemon`). The
    /// HTTP API does not route it, and the bus refuses it to a network caller as if it were not
    /// there. The bus checks it itself; no gate is needed.
    case socket
    /// Not a check on the bus but a word to the transports: the method is open to anyone and
    /// abuse-prone (a sign-up, a sign-in, a password reset), so the HTTP API counts its calls
    /// against the per-client-address limit (`httpRateLimitPerMinute`) before it reaches the bus.
    case clientRateLimited

    public var description: String {
        switch self {
        case .session: "session"
        case .onboarded: "onboarded"
        case .verifiedEmail: "verifiedEmail"
        case .entitlement(let name): "entitlement(\(name))"
        case .meter(let name): "meter(\(name))"
        case .admin: "admin"
        case .capability(let name): "capability(\(name))"
        case .idempotent: "idempotent"
        case .socket: "socket"
        case .clientRateLimited: "clientRateLimited"
        }
    }
}

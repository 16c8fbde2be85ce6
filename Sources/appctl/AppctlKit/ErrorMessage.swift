import BusCore
import Varlink

/// A daemon error reply as a sentence with the next step, for people. The varlink name stays
/// at the end (in parentheses) to search for, and `--json` prints the reply itself.
enum ErrorMessage {
    static func sentence(_ reply: VarlinkReply) -> String {
        let name = reply.error ?? "error"
        let p = reply.parameters
        func text(_ key: String) -> String { (p[key]?.stringValue ?? "").escapingControlCharacters() }
        let short = name.split(separator: ".").last.map(String.init) ?? name
        switch name {
        case "io.appd.Auth.OnboardingRequired": return "Complete onboarding first: appctl onboard"
        case "io.appd.Auth.Unauthenticated": return "You are not signed in, or your session ended. Run 'appctl login <email>'."
        case "io.appd.Auth.SessionExpired": return "Your session expired. Run 'appctl login <email>' again."
        case "io.appd.Auth.InvalidCredentials": return "Wrong email or password."
        case "io.appd.Auth.TooManyAttempts":
            return "Too many failed sign-ins for this account: try again in \(p["retryAfterSeconds"].map(Output.scalar) ?? "a few") s."
        case "io.appd.Auth.AccountDisabled": return "This account is disabled; ask an administrator."
        case "io.appd.Auth.Busy": return "Too many sign-ins in progress; retry in a moment."
        case "io.appd.Auth.InvalidResetToken": return "The reset token is unknown, used or expired; request a new one."
        case "io.appd.Payments.PaymentRequired":
            let resets = p["resetsAt"]?.stringValue.map { " The free quota resets at \($0)." } ?? ""
            return "This needs the '\(text("entitlement"))' entitlement, or its free quota is used up.\(resets) See 'appctl payments status'."
        case "io.appd.Payments.UnknownAccount": return "No account has the email \(text("email"))."
        case "org.varlink.service.InvalidParameter": return "Invalid value for '\(text("parameter"))'."
        case "org.varlink.service.PermissionDenied":
            let reason = text("reason")
            return reason.isEmpty ? "Permission denied." : "Permission denied: \(reason)."
        case "org.varlink.service.MethodNotFound", "org.varlink.service.InterfaceNotFound":
            return "The daemon does not serve that (is the plugin running? see 'appctl plugins')."
        case "io.appd.Bus.DeadlineExceeded": return "The call did not finish in time; retry, or raise --timeout."
        case "io.appd.Bus.InternalError": return "appd failed unexpectedly; its log has the details under message id \(text("messageId"))."
        default:
            break
        }
        if short == "ValidationFailed" { return "\(text("field")): \(text("reason"))" }
        if short == "NotFound" { return "Not found (check the id: any unique prefix of at least 4 characters works, with or without its t_ or c_)." }
        if !text("reason").isEmpty { return "\(short): \(text("reason"))" }
        let rest = p.objectValue.map { $0.isEmpty ? "" : " " + JSONValue.object($0).jsonText } ?? ""
        return "\(short)\(rest.escapingControlCharacters())"
    }
}

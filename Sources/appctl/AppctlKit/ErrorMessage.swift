// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Varlink

/// A daemon error reply as a sentence with the next step, for people. The varlink name stays
/// at the end (in parentheses) to search for, and `--json` prints the reply itself.
enum ErrorMessage {
    static func sentence(_ reply: VarlinkReply) -> String {
        let name = reply.error ?? "error"
        let p = reply.parameters
        func text(_ key: String) -> String { (p[key]?.stringValue ?? "").escapingControlCharacters() }
        let short = name.split(separator: ".").last.map(String.init) ?? name
        if let typed = ContractErrors.typed(name: name, parameters: p.objectValue ?? [:]), let sentence = sentence(typed) { return sentence }
        switch name {
        case "org.varlink.service.InvalidParameter": return "Invalid value for '\(text("parameter"))'."
        case "org.varlink.service.PermissionDenied":
            let reason = text("reason")
            return reason.isEmpty ? "Permission denied." : "Permission denied: \(reason)."
        case "org.varlink.service.MethodNotFound", "org.varlink.service.InterfaceNotFound":
            return "The daemon does not serve that (is the plugin running? see 'appctl plugins')."
        case DeadlineExceeded.name: return "The call did not finish in time; retry, or raise --timeout."
        case InternalError.name: return "appd failed unexpectedly; its log has the details under message id \(text("messageId"))."
        default:
            break
        }
        if short == "ValidationFailed" { return "\(text("field")): \(text("reason"))" }
        if short == "NotFound" {
            return "Not found (check the id: any unique prefix of at least 4 characters works, with or without its t_ or c_; a todo's unique ending works too)."
        }
        if !text("reason").isEmpty { return "\(short): \(text("reason"))" }
        let rest = p.objectValue.map { $0.isEmpty ? "" : " " + JSONValue.object($0).jsonText } ?? ""
        return "\(short)\(rest.escapingControlCharacters())"
    }

    /// The sentences of the errors people meet most, by their typed case.
    private static func sentence(_ error: any InterfaceError) -> String? {
        switch error as? AuthError {
        case .onboardingRequired?: return "Complete onboarding first: appctl onboard"
        case .unauthenticated?: return "You are not signed in, or your session ended. Run 'appctl login <email>'."
        case .sessionExpired?: return "Your session expired. Run 'appctl login <email>' again."
        case .invalidCredentials?: return "Wrong email or password."
        case .tooManyAttempts(let seconds)?: return "Too many failed sign-ins for this account: try again in \(seconds) s."
        case .accountDisabled?: return "This account is disabled; ask an administrator."
        case .busy?: return "Too many sign-ins in progress; retry in a moment."
        case .invalidResetToken?: return "The reset token is unknown, used or expired; request a new one."
        default: break
        }
        switch error as? PaymentsError {
        case .paymentRequired(let entitlement, _, let resetsAt)?:
            let resets = resetsAt.map { " The free quota resets at \($0)." } ?? ""
            return "This needs the '\(entitlement.escapingControlCharacters())' entitlement, or its free quota is used up.\(resets) See 'appctl payments status'."
        case .unknownAccount(let email)?: return "No account has the email \(email.escapingControlCharacters())."
        default: break
        }
        switch error as? ChatError {
        case .modelNotAllowed(let model, let allowed)?:
            return
                "The model '\(model.escapingControlCharacters())' is not offered; use one of: \(allowed.joined(separator: ", ").escapingControlCharacters()) (appctl chat models)."
        case .memoryFull(let limit)?: return "Chat keeps at most \(limit) memories for an account; forget some first (appctl chat memories, appctl chat forget ID)."
        default: break
        }
        switch error as? ConsoleError {
        case .consoleOff?: return "The console is off: start appd with --console-listen 127.0.0.1:<port> (consoleListen), then run 'appctl console' again."
        case .unknownSession(let id)?: return "No console session has the id '\(id.escapingControlCharacters())' (appctl console sessions lists them)."
        case .tooManyLinks(let limit)?: return "\(limit) console links are waiting to be opened; wait two minutes for them to expire, or end them: appctl console end --all."
        default: break
        }
        switch error as? SettingsError {
        case .conflict(let setting)?:
            return
                "The setting changed since: it is \(setting.value.json.jsonText.escapingControlCharacters()) at version \(setting.version) now; look and set it again "
                + "with --expected-version \(setting.version)."
        case .unknownSetting(let key)?: return "There is no setting '\(key.escapingControlCharacters())' (appctl settings lists them)."
        default: return nil
        }
    }
}

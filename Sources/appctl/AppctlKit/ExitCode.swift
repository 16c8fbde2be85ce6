// SPDX-License-Identifier: Apache-2.0
import Contracts
import BusCore
import Varlink

/// appctl's exit codes (documented in the README and `appctl --help`).
enum ExitCode {
    static let ok: Int32 = 0
    /// The daemon answered with an error not listed below.
    static let daemonError: Int32 = 1
    /// The daemon could not be reached (not running, wrong socket, timed out).
    static let unreachable: Int32 = 2
    /// The command line was wrong.
    static let usage: Int32 = 64
    /// Not signed in, or the session ended: run `appctl login`.
    static let notSignedIn: Int32 = 67
    /// The daemon refused a parameter (`org.varlink.service.InvalidParameter`, validation).
    static let invalidParameter: Int32 = 65
    /// The interface or method does not exist or is not implemented.
    static let notFound: Int32 = 69
    /// Try again later: a deadline, a timeout or a rate limit.
    static let tryAgain: Int32 = 75
    /// Permission denied (admin methods).
    static let permissionDenied: Int32 = 77
    /// The feature needs an entitlement, or its free quota is used up (`PaymentRequired`).
    static let paymentRequired: Int32 = 68

    /// The exit code for a daemon error reply.
    static func forError(_ reply: VarlinkReply) -> Int32 {
        let name = reply.error ?? ""
        switch ContractErrors.typed(name: name, parameters: reply.parameters.objectValue ?? [:]) {
        case let error as AuthError:
            switch error {
            case .tooManyAttempts, .busy: return tryAgain
            case .unauthenticated, .sessionExpired: return notSignedIn
            default: break
            }
        case let error as PaymentsError:
            if case .paymentRequired = error { return paymentRequired }
        case let error as DaemonError:
            if case .pluginUnavailable = error { return tryAgain }
        default: break
        }
        switch name {
        case "org.varlink.service.InvalidParameter": return invalidParameter
        case "org.varlink.service.InterfaceNotFound", "org.varlink.service.MethodNotFound",
            "org.varlink.service.MethodNotImplemented":
            return notFound
        case "org.varlink.service.PermissionDenied": return permissionDenied
        case DeadlineExceeded.name: return tryAgain
        case let name where name.hasSuffix(".ValidationFailed"): return invalidParameter
        default: return daemonError
        }
    }

    static let table = """
        EXIT CODES:
          0    Success.
          1    The daemon answered with an error.
          2    The daemon could not be reached (not running, wrong --socket, or timed out).
          64   Usage error: the command line was wrong.
          65   The daemon refused a parameter (InvalidParameter, ValidationFailed).
          67   Not signed in, or the session ended: run 'appctl login'.
          68   Payment required: the feature needs an entitlement, or its free quota is used up.
          69   No such interface or method, or it is not implemented.
          75   Try again later (deadline exceeded, too many attempts, busy, a plugin restarting).
          77   Permission denied.
        """
}

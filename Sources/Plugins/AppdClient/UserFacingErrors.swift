// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation

/// Text an app can show its user for an error, and what they can do about it. The errors'
/// own `description` stays the operator's (it names config keys and appctl commands).
public struct UserFacingText: Sendable, Equatable {
    public let message: String
    public let suggestion: String?
    public init(_ message: String, _ suggestion: String? = nil) {
        self.message = message
        self.suggestion = suggestion
    }

    /// What fits any error of `category`, when no case has words of its own.
    static func generic(_ category: ErrorCategory?) -> UserFacingText {
        switch category {
        case .invalid?: UserFacingText("Something you entered isn't valid.", "Check it and try again.")
        case .unauthenticated?: UserFacingText("You're signed out.", "Sign in to continue.")
        case .paymentRequired?: UserFacingText("This needs a subscription.", "Subscribe, or restore your purchases.")
        case .forbidden?: UserFacingText("You can't do that with this account.")
        case .notFound?: UserFacingText("It isn't there anymore.", "Refresh and try again.")
        case .conflict?: UserFacingText("It was changed somewhere else.", "Look at the latest version and try again.")
        case .gone?: UserFacingText("What's on this device is out of date.", "Refresh to get the latest.")
        case .unprocessable?: UserFacingText("That request couldn't be completed.")
        case .tooManyRequests?: UserFacingText("Too many attempts.", "Wait a moment and try again.")
        case .unavailable?: UserFacingText("The service isn't available right now.", "Try again in a moment.")
        case .timedOut?: UserFacingText("That took too long.", "Check your connection and try again.")
        case .notImplemented?: UserFacingText("That isn't available.")
        case .internal?, nil: UserFacingText("Something went wrong on our side.", "Try again later.")
        }
    }
}

/// The category each contract error declares in its interface's IDL (`category:`), read once.
enum ContractCategories {
    static let idls = [
        AuthInterface.idl, TodosInterface.idl, ChatInterface.idl, PaymentsInterface.idl, RatingInterface.idl, SettingsInterface.idl,
        FilesInterface.idl, DaemonInterface.idl, BackupInterface.idl, ExportInterface.idl, ConsoleInterface.idl,
    ]

    static let all: [String: ErrorCategory] = {
        var table: [String: ErrorCategory] = [:]
        for idl in idls {
            guard let interface = try? VarlinkInterface(parsing: idl) else { continue }
            for error in interface.errors { table[interface.name + "." + error.name] = error.category }
        }
        return table
    }()
}

/// An interface error with words for an app's user: its own where a case has them, else its
/// category's (as its IDL declares it). Every contract error is one, and a `LocalizedError`.
public protocol WordedForUsers: InterfaceError, LocalizedError {
    /// The case's own words; nil: its category's.
    var userFacing: UserFacingText? { get }
}

extension WordedForUsers {
    var words: UserFacingText { userFacing ?? .generic(ContractCategories.all[wireName]) }
    public var errorDescription: String? { words.message }
    public var recoverySuggestion: String? { words.suggestion }
    /// What the operator reads (the error's `description`), for logs and bug reports.
    public var failureReason: String? { description }
}

// The contracts conform here, not in their module: LocalizedError is Foundation's, which the
// server never links.
extension AuthError: WordedForUsers {
    public var userFacing: UserFacingText? {
        switch self {
        case .invalidCredentials: UserFacingText("The email or password is incorrect.", "Check them, or reset your password.")
        case .validationFailed(let field, let reason): UserFacingText("The \(field) \(reason).")
        case .unauthenticated, .sessionExpired: UserFacingText("You're signed out.", "Sign in to continue.")
        case .onboardingRequired: UserFacingText("Finish setting up your account first.")
        case .tooManyAttempts(let seconds): UserFacingText("Too many attempts.", "Try again in \(seconds) seconds.")
        case .accountDisabled: UserFacingText("This account is disabled.", "Contact support.")
        case .accountExistsForEmail: UserFacingText("An account with this email already exists.", "Sign in with it, then add this sign-in method in settings.")
        case .emailNotVerified: UserFacingText("Please verify your email address first.", "Open the link in the email we sent you.")
        case .invalidResetToken, .invalidVerificationToken: UserFacingText("This link has expired or was already used.", "Ask for a new one.")
        case .reauthenticationRequired: UserFacingText("Please confirm it's you.", "Enter your password, or sign in again.")
        case .lastSignInMethod: UserFacingText("This is your only way to sign in.", "Add another before removing it.")
        default: nil
        }
    }
}

extension TodosError: WordedForUsers {
    public var userFacing: UserFacingText? {
        switch self {
        case .validationFailed(let field, let reason): UserFacingText("The \(field) \(reason).")
        case .notFound: UserFacingText("This todo no longer exists.", "Refresh the list.")
        case .quotaExceeded(let limit): UserFacingText("You have \(limit) todos, the most an account can keep.", "Delete some to add more.")
        case .conflict: UserFacingText("This todo was changed on another device.", "Look at the latest version and try again.")
        case .resyncRequired: UserFacingText("This device has been offline too long to catch up.", "Refresh to get the latest.")
        }
    }
}

extension ChatError: WordedForUsers {
    public var userFacing: UserFacingText? {
        switch self {
        case .validationFailed(let field, let reason): UserFacingText("The \(field) \(reason).")
        case .notFound: UserFacingText("This conversation no longer exists.", "Refresh the list.")
        case .memoryFull: UserFacingText("Memory is full.", "Delete some memories to add more.")
        case .modelNotAllowed: UserFacingText("That model isn't available to you.", "Choose another model.")
        default: nil
        }
    }
}

extension PaymentsError: WordedForUsers {
    public var userFacing: UserFacingText? {
        switch self {
        case .paymentRequired: UserFacingText("This needs a subscription.", "Subscribe, or restore your purchases.")
        case .providerUnavailable: UserFacingText("The store can't be reached right now.", "Try again in a moment.")
        case .foreignTransaction: UserFacingText("This purchase belongs to another account.", "Sign in with the account that made it.")
        default: nil
        }
    }
}

extension RatingError: WordedForUsers { public var userFacing: UserFacingText? { nil } }
extension SettingsError: WordedForUsers { public var userFacing: UserFacingText? { nil } }

extension FilesError: WordedForUsers {
    public var userFacing: UserFacingText? {
        switch self {
        case .validationFailed(let field, let reason): UserFacingText("The \(field) \(reason).")
        case .notFound: UserFacingText("This file no longer exists.", "Refresh the list.")
        case .quotaExceeded: UserFacingText("Your storage is full.", "Delete some files to add more.")
        case .tooLarge: UserFacingText("This file is too large.", "Choose a smaller one, or compress it.")
        case .typeRefused: UserFacingText("This kind of file can't be uploaded.", "Choose a photo or a PDF.")
        case .inUse: UserFacingText("This file is still in use.", "Remove it where it's shown first.")
        case .offsetMismatch: UserFacingText("The upload was interrupted.", "Try again.")
        }
    }
}

extension AppdClientError: LocalizedError {
    public var errorDescription: String? {
        switch self {
        case .server(let status, _, _): UserFacingText.generic(Self.category(status)).message
        case .transport: "The server can't be reached."
        case .unexpectedReply: "The app and the server don't understand each other."
        case .notSignedIn: "You're signed out."
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .server(let status, _, _): UserFacingText.generic(Self.category(status)).suggestion
        case .transport: "Check your connection and try again."
        case .unexpectedReply: "Update the app."
        case .notSignedIn: "Sign in to continue."
        }
    }

    public var failureReason: String? { description }

    /// An undeclared error's category, from the HTTP status appd answered it with.
    private static func category(_ status: Int) -> ErrorCategory? {
        ErrorCategory.allCases.first { $0.httpStatus == status }
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The commands and replies of `io.appd.Auth` (its IDL: `AuthInterface.idl`).
extension AuthInterface {
    public struct SignUp: Command {
        public static let method = "io.appd.Auth.SignUp"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = SignUpReply
        public var email: String
        public var password: String
        public var displayName: String?
        public init(email: String, password: String, displayName: String? = nil) {
            self.email = email
            self.password = password
            self.displayName = displayName
        }
    }

    public struct SignIn: Command {
        public static let method = "io.appd.Auth.SignIn"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = SessionReply
        public var email: String
        public var password: String
        public init(email: String, password: String) {
            self.email = email
            self.password = password
        }
    }

    public struct Authenticate: Command {
        public static let method = "io.appd.Auth.Authenticate"
        public static let requirements: [Requirement] = [.socket]
        public typealias Reply = UserReply
        public var accessToken: String
        public init(accessToken: String) {
            self.accessToken = accessToken
        }
    }

    public struct Refresh: Command {
        public static let method = "io.appd.Auth.Refresh"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = SessionReply
        public var refreshToken: String
        public init(refreshToken: String) {
            self.refreshToken = refreshToken
        }
    }

    public struct SignOut: Command {
        public static let method = "io.appd.Auth.SignOut"
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = Empty
        public init() {}
    }

    public struct SignOutEverywhere: Command {
        public static let method = "io.appd.Auth.SignOutEverywhere"
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = Empty
        public init() {}
    }

    public struct WhoAmI: Command {
        public static let method = "io.appd.Auth.WhoAmI"
        public static let readsOnly = true
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = UserReply
        public init() {}
    }

    public struct CompleteOnboarding: Command {
        public static let method = "io.appd.Auth.CompleteOnboarding"
        public static let requirements: [Requirement] = [.session, .idempotent]
        public typealias Reply = UserReply
        public init() {}
    }

    public struct UpdateProfile: Command {
        public static let method = "io.appd.Auth.UpdateProfile"
        public static let requirements: [Requirement] = [.session, .idempotent]
        public typealias Reply = UserReply
        public var displayName: String?
        public init(displayName: String? = nil) {
            self.displayName = displayName
        }
    }

    public struct SetAvatar: Command {
        public static let method = "io.appd.Auth.SetAvatar"
        public static let requirements: [Requirement] = [.session, .idempotent]
        public typealias Reply = UserReply
        public var fileId: String?
        public init(fileId: String?) { self.fileId = fileId }
    }

    public struct ChangePassword: Command {
        public static let method = "io.appd.Auth.ChangePassword"
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = Empty
        public var currentPassword: String
        public var newPassword: String
        public init(currentPassword: String, newPassword: String) {
            self.currentPassword = currentPassword
            self.newPassword = newPassword
        }
    }

    public struct CheckSignUp: Command {
        public static let method = "io.appd.Auth.CheckSignUp"
        public static let readsOnly = true
        public typealias Reply = Empty
        public var email: String
        public var password: String
        public init(email: String, password: String) {
            self.email = email
            self.password = password
        }
    }

    public struct RequestPasswordReset: Command {
        public static let method = "io.appd.Auth.RequestPasswordReset"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = Empty
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }

    public struct IssueResetToken: Command {
        public static let method = "io.appd.Auth.IssueResetToken"
        public static let requirements: [Requirement] = [.capability("auth.resetTokens")]
        public typealias Reply = IssuedResetToken
        public var requestId: String
        public init(requestId: String) {
            self.requestId = requestId
        }
    }

    public struct IssuedResetToken: Codable, Sendable {
        public var resetToken: String
        public var email: String
        public var expiresAt: String
        public var resetLink: String?
        public init(resetToken: String, email: String, expiresAt: String, resetLink: String? = nil) {
            self.resetToken = resetToken
            self.email = email
            self.expiresAt = expiresAt
            self.resetLink = resetLink
        }
    }

    public struct ResetPassword: Command {
        public static let method = "io.appd.Auth.ResetPassword"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = Empty
        public var resetToken: String
        public var newPassword: String
        public init(resetToken: String, newPassword: String) {
            self.resetToken = resetToken
            self.newPassword = newPassword
        }
    }

    public struct DeleteAccount: Command {
        public static let method = "io.appd.Auth.DeleteAccount"
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = Empty
        public var password: String?
        public init(password: String? = nil) {
            self.password = password
        }
    }

    public struct UserReply: Codable, Sendable {
        public var user: User
        public init(user: User) {
            self.user = user
        }
    }
    public struct SignUpReply: Codable, Sendable {
        public var user: User
        public var session: Session?
        public init(user: User, session: Session? = nil) {
            self.user = user
            self.session = session
        }
    }
    public struct SessionReply: Codable, Sendable {
        public var session: Session
        public init(session: Session) {
            self.session = session
        }
    }
}

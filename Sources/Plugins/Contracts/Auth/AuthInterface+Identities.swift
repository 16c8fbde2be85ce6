// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The commands of sign-in with Apple and Google, guest accounts and email verification.
extension AuthInterface {
    public struct SignInWithIdToken: Command {
        public static let method = "io.appd.Auth.SignInWithIdToken"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = IdTokenSession
        public var provider: String
        public var idToken: String
        public var nonce: String?
        public var fullName: String?
        public var authorizationCode: String?
        public init(provider: String, idToken: String, nonce: String? = nil, fullName: String? = nil, authorizationCode: String? = nil) {
            self.provider = provider
            self.idToken = idToken
            self.nonce = nonce
            self.fullName = fullName
            self.authorizationCode = authorizationCode
        }
    }

    public struct IdTokenSession: Codable, Sendable {
        public var session: Session
        public var created: Bool
        /// Set when this sign-in linked the identity to an existing account by its email: what
        /// the account can sign in with now ("apple", "google", "password").
        public var signInMethods: [String]?
        public init(session: Session, created: Bool, signInMethods: [String]? = nil) {
            self.session = session
            self.created = created
            self.signInMethods = signInMethods
        }
    }

    public struct SignInAnonymously: Command {
        public static let method = "io.appd.Auth.SignInAnonymously"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = SessionReply
        public init() {}
    }

    public struct UpgradeGuest: Command {
        public static let method = "io.appd.Auth.UpgradeGuest"
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = UserReply
        public var email: String
        public var password: String
        public init(email: String, password: String) {
            self.email = email
            self.password = password
        }
    }

    public struct ListIdentities: Command {
        public static let method = "io.appd.Auth.ListIdentities"
        public static let readsOnly = true
        public static let requirements: [Requirement] = [.session]
        public typealias Reply = IdentityList
        public init() {}
    }

    public struct IdentityList: Codable, Sendable {
        public var identities: [Identity]
        public init(identities: [Identity]) {
            self.identities = identities
        }
    }

    public struct LinkIdentity: Command {
        public static let method = "io.appd.Auth.LinkIdentity"
        public static let requirements: [Requirement] = [.session, .idempotent]
        public typealias Reply = IdentityReply
        public var provider: String
        public var idToken: String
        public var nonce: String?
        public var authorizationCode: String?
        public init(provider: String, idToken: String, nonce: String? = nil, authorizationCode: String? = nil) {
            self.provider = provider
            self.idToken = idToken
            self.nonce = nonce
            self.authorizationCode = authorizationCode
        }
    }

    public struct IdentityReply: Codable, Sendable {
        public var identity: Identity
        public init(identity: Identity) {
            self.identity = identity
        }
    }

    public struct UnlinkIdentity: Command {
        public static let method = "io.appd.Auth.UnlinkIdentity"
        public static let requirements: [Requirement] = [.session, .idempotent]
        public typealias Reply = Empty
        public var provider: String
        public init(provider: String) {
            self.provider = provider
        }
    }

    public struct RequestEmailVerification: Command {
        public static let method = "io.appd.Auth.RequestEmailVerification"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = Empty
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }

    public struct IssueVerificationToken: Command {
        public static let method = "io.appd.Auth.IssueVerificationToken"
        public static let requirements: [Requirement] = [.capability("auth.verificationTokens")]
        public typealias Reply = IssuedVerificationToken
        public var requestId: String
        public init(requestId: String) {
            self.requestId = requestId
        }
    }

    public struct IssuedVerificationToken: Codable, Sendable {
        public var verificationToken: String
        public var email: String
        public var expiresAt: String
        public init(verificationToken: String, email: String, expiresAt: String) {
            self.verificationToken = verificationToken
            self.email = email
            self.expiresAt = expiresAt
        }
    }

    public struct VerifyEmail: Command {
        public static let method = "io.appd.Auth.VerifyEmail"
        /// Open to anyone and abuse-prone: limited per client address on the network.
        public static let requirements: [Requirement] = [.clientRateLimited]
        public typealias Reply = Empty
        public var verificationToken: String
        public init(verificationToken: String) {
            self.verificationToken = verificationToken
        }
    }
}

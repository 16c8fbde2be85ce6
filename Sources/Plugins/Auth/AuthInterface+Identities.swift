import Bus

/// The commands of sign-in with Apple and Google, guest accounts and email verification.
extension AuthInterface {
    struct SignInWithIdToken: Command {
        static let method = "io.appd.Auth.SignInWithIdToken"
        typealias Reply = IdTokenSession
        var provider: String
        var idToken: String
        var nonce: String?
        var fullName: String?
        var authorizationCode: String?
    }

    struct IdTokenSession: Codable, Sendable {
        var session: Session
        var created: Bool
    }

    struct SignInAnonymously: Command {
        static let method = "io.appd.Auth.SignInAnonymously"
        typealias Reply = SessionReply
    }

    struct UpgradeGuest: Command {
        static let method = "io.appd.Auth.UpgradeGuest"
        static let requirements: [Requirement] = [.session]
        typealias Reply = UserReply
        var email: String
        var password: String
    }

    struct ListIdentities: Command {
        static let method = "io.appd.Auth.ListIdentities"
        static let requirements: [Requirement] = [.session]
        typealias Reply = IdentityList
    }

    struct IdentityList: Codable, Sendable { var identities: [Identity] }

    struct LinkIdentity: Command {
        static let method = "io.appd.Auth.LinkIdentity"
        static let requirements: [Requirement] = [.session, .idempotent]
        typealias Reply = IdentityReply
        var provider: String
        var idToken: String
        var nonce: String?
        var authorizationCode: String?
    }

    struct IdentityReply: Codable, Sendable { var identity: Identity }

    struct UnlinkIdentity: Command {
        static let method = "io.appd.Auth.UnlinkIdentity"
        static let requirements: [Requirement] = [.session, .idempotent]
        typealias Reply = Empty
        var provider: String
    }

    struct RequestEmailVerification: Command {
        static let method = "io.appd.Auth.RequestEmailVerification"
        typealias Reply = Empty
        var email: String
    }

    struct IssueVerificationToken: Command {
        static let method = "io.appd.Auth.IssueVerificationToken"
        static let requirements: [Requirement] = [.capability("auth.verificationTokens")]
        typealias Reply = IssuedVerificationToken
        var requestId: String
    }

    struct IssuedVerificationToken: Codable, Sendable {
        var verificationToken: String
        var email: String
        var expiresAt: String
    }

    struct VerifyEmail: Command {
        static let method = "io.appd.Auth.VerifyEmail"
        typealias Reply = Empty
        var verificationToken: String
    }
}

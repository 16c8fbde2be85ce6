// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the auth plugin publishes. Every one is durable and about one user.
public enum AuthEvents {
    public static let all: [any Event.Type] = [
        UserSignedUp.self, SignedIn.self, SignedOut.self, OnboardingCompleted.self, PasswordResetRequested.self, AccountDeleted.self,
        SignUpRepeated.self, IdentityLinked.self, IdentityUnlinked.self, EmailVerificationRequested.self, EmailVerified.self,
        GuestCreated.self,
    ]
}

/// An account was created.
public struct UserSignedUp: OwnedEvent, Equatable {
    public static let topic = "auth.userSignedUp"
    public var userId: String
    public var email: String
    public init(userId: String, email: String) {
        self.userId = userId
        self.email = email
    }
}

/// Someone signed up with the email of an existing account. The caller was answered as if a
/// new account had been made (so sign-up tells nobody which emails have accounts); the owner is
/// told instead (a mailer writes "you already have an account"). At most one an hour per
/// account.
public struct SignUpRepeated: OwnedEvent, Equatable {
    public static let topic = "auth.signUpRepeated"
    public var userId: String
    public var email: String
    public init(userId: String, email: String) {
        self.userId = userId
        self.email = email
    }
}

/// A session was opened (sign-in, or the one sign-up opens).
public struct SignedIn: OwnedEvent, Equatable {
    public static let topic = "auth.signedIn"
    public var userId: String
    public init(userId: String) { self.userId = userId }
}

/// One session, or every session of the account (`everywhere`), was closed.
public struct SignedOut: OwnedEvent, Equatable {
    public static let topic = "auth.signedOut"
    public var userId: String
    public var everywhere: Bool
    public init(userId: String, everywhere: Bool) {
        self.userId = userId
        self.everywhere = everywhere
    }
}

/// The account completed onboarding.
public struct OnboardingCompleted: OwnedEvent, Equatable {
    public static let topic = "auth.onboardingCompleted"
    public var userId: String
    public init(userId: String) { self.userId = userId }
}

/// Someone asked to reset the account's password. It carries no token: a plugin holding the
/// `auth.resetTokens` capability (the mailer) mints one with `io.appd.Auth.IssueResetToken(requestId)`.
///
/// Version 2: version 1 carried the token itself and was never written to the log.
public struct PasswordResetRequested: OwnedEvent, Equatable {
    public static let topic = "auth.passwordResetRequested"
    public static let version = 2
    public var requestId: String
    public var userId: String
    public var email: String
    /// When the request (and any token issued for it) expires.
    public var expiresAt: String
    public init(requestId: String, userId: String, email: String, expiresAt: String) {
        self.requestId = requestId
        self.userId = userId
        self.email = email
        self.expiresAt = expiresAt
    }
}

/// The account was deleted; every plugin erases what it keeps about the user. Admins see it
/// (the user is gone); it is the one event about the user that erasure keeps.
public struct AccountDeleted: OwnedEvent, Equatable {
    public static let topic = "auth.accountDeleted"
    public static let audience = EventAudience.admin
    public var userId: String
    public init(userId: String) { self.userId = userId }
}

/// An Apple or Google identity was linked to the account (at its first sign-in, or by LinkIdentity).
public struct IdentityLinked: OwnedEvent, Equatable {
    public static let topic = "auth.identityLinked"
    public var userId: String
    /// `apple` or `google`.
    public var provider: String
    public init(userId: String, provider: String) {
        self.userId = userId
        self.provider = provider
    }
}

/// An identity was unlinked from the account.
public struct IdentityUnlinked: OwnedEvent, Equatable {
    public static let topic = "auth.identityUnlinked"
    public var userId: String
    public var provider: String
    public init(userId: String, provider: String) {
        self.userId = userId
        self.provider = provider
    }
}

/// The account's email is to be verified (at sign-up, or asked again). It carries no token: a
/// plugin holding the `auth.verificationTokens` capability (the mailer) mints one with
/// `io.appd.Auth.IssueVerificationToken(requestId)` and mails it.
public struct EmailVerificationRequested: OwnedEvent, Equatable {
    public static let topic = "auth.emailVerificationRequested"
    public var requestId: String
    public var userId: String
    public var email: String
    /// When the request (and any token issued for it) expires.
    public var expiresAt: String
    public init(requestId: String, userId: String, email: String, expiresAt: String) {
        self.requestId = requestId
        self.userId = userId
        self.email = email
        self.expiresAt = expiresAt
    }
}

/// The account's email was verified.
public struct EmailVerified: OwnedEvent, Equatable {
    public static let topic = "auth.emailVerified"
    public var userId: String
    public init(userId: String) { self.userId = userId }
}

/// A guest account was made (SignInAnonymously). Upgrading it later publishes
/// auth.userSignedUp with the address it was given.
public struct GuestCreated: OwnedEvent, Equatable {
    public static let topic = "auth.guestCreated"
    public var userId: String
    public init(userId: String) { self.userId = userId }
}

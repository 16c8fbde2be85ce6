// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// Guest accounts.
extension AuthService {
    func signInAnonymously(causedBy cause: (any Cause)?) async throws -> Session {
        guard options.guestAccounts else { throw AuthError.guestsDisabled }
        let record = try await repository.createGuest(id: "u_" + (try SecretToken.generate().prefix(22)), now: now, causedBy: cause)
        return try await openSession(for: record, family: try SecretToken.generate(), openedBy: nil, causedBy: cause)
    }

    /// Gives the signed-in guest an email and a password, in place. An address another account
    /// has is answered as sign-up answers it (security review 2, finding 7): the reply looks
    /// like an upgrade, the account stays a guest, and the address's owner is mailed
    /// (auth.signUpRepeated) — the reply tells nobody which addresses have accounts.
    func upgradeGuest(userID: String, email rawEmail: String, password: String, causedBy cause: (any Cause)?) async throws -> User {
        let email = try AuthValidation.email(rawEmail)
        try AuthValidation.password(password, email: email)
        guard let record = try await repository.user(id: userID) else { throw AuthError.unauthenticated }
        guard record.guest else { throw AuthError.notAGuest }
        let hash = try await hashing { try await hasher.hash(password, lane: .account) }
        let verification = (id: "ev_" + (try SecretToken.generate().prefix(22)), expires: now + Self.nanoseconds(options.verificationLifetime))
        switch try await repository.upgradeGuest(
            userID: userID, email: email, passwordHash: hash, emailVerified: false, verification: verification, now: now, causedBy: cause)
        {
        case .upgraded(let upgraded):
            audit.notice("guest upgraded", metadata: ["user.id": "\(userID)"])
            return upgraded.user
        case .notAGuest: throw AuthError.notAGuest
        case .emailTaken:
            return User(
                id: record.id, email: email, displayName: record.displayName, onboarded: record.onboardedAt != nil, emailVerified: false, guest: false,
                createdAt: WallTime(nanosecondsSinceEpoch: record.createdAt).rfc3339)
        }
    }
}

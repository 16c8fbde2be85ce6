// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Storage

/// Sign-in with Apple and Google: ID tokens verified, identities linked to accounts.
extension AuthService {
    /// `apple` or `google`, any case.
    static func provider(_ name: String) throws(AuthError) -> IdentityProvider {
        guard let provider = IdentityProvider(rawValue: name.lowercased()) else { throw .validation("provider", "needs apple or google") }
        return provider
    }

    /// Verifies the token and opens a session for the account its identity is linked to —
    /// linking it to the account with the same email when both emails are verified, or making
    /// an account without a password. An existing account whose email is not verified is
    /// never linked automatically: someone who registered a victim's address with a password
    /// must not get the victim's later Apple or Google sign-in (AccountExistsForEmail).
    func signInWithIdToken(
        provider name: String, idToken: String, nonce: String?, fullName: String?, authorizationCode: String?, causedBy cause: (any Cause)?
    ) async throws -> AuthInterface.IdTokenSession {
        let provider = try Self.provider(name)
        let identity = try await verifier.verify(idToken, provider: provider, rawNonce: nonce, now: now)
        let signedIn = try await findOrCreate(identity, fullName: fullName, causedBy: cause)
        await keepRefreshToken(of: identity, code: authorizationCode)
        return signedIn
    }

    private func findOrCreate(_ identity: VerifiedIdentity, fullName: String?, causedBy cause: (any Cause)?) async throws -> AuthInterface.IdTokenSession {
        if let record = try await repository.user(identity: identity) {
            return try await session(for: record, created: false, provider: identity.provider, causedBy: cause)
        }
        guard let email = identity.email else { throw AuthError.invalidIdToken(reason: .noEmail) }
        // Apple gives the name once, at the first sign-in: kept when it is a usable display name.
        let name = (try? AuthValidation.displayName(fullName)) ?? nil
        for _ in 0..<3 {
            let id = "u_" + (try SecretToken.generate().prefix(22))
            do {
                switch try await repository.signIn(identity: identity, email: email, newUserID: id, displayName: name, now: now, causedBy: cause) {
                case .account(let record, let created): return try await session(for: record, created: created, provider: identity.provider, causedBy: cause)
                case .linkedByEmail(let record):
                    repository.streams?.changed(userID: record.id)
                    audit.notice(
                        "identity linked by email; other sessions ended",
                        metadata: ["user.id": "\(record.id)", "provider": "\(identity.provider.rawValue)", "password": record.hasPassword ? "kept" : "none"])
                    var signedIn = try await session(for: record, created: false, provider: identity.provider, causedBy: cause)
                    let providers = try await repository.identities(userID: record.id).map(\.provider)
                    signedIn.signInMethods = Set(providers + (record.hasPassword ? ["password"] : [])).sorted()
                    return signedIn
                case .emailBelongsToAnotherAccount: throw AuthError.accountExistsForEmail
                }
            } catch let error as StorageError where error.kind == .constraint {
                continue  // a concurrent first sign-in of the same identity or email won: look again
            }
        }
        throw AuthError.busy
    }

    private func session(
        for record: UserRecord, created: Bool, provider: IdentityProvider, causedBy cause: (any Cause)?
    ) async throws
        -> AuthInterface.IdTokenSession
    {
        guard !record.disabled else { throw AuthError.accountDisabled }
        guard record.emailVerified || !options.requireVerifiedEmail else { throw AuthError.emailNotVerified }
        return .init(session: try await openSession(for: record, family: try SecretToken.generate(), openedBy: provider, causedBy: cause), created: created)
    }

    /// Exchanges Apple's authorization code for its refresh token and keeps it sealed, so that
    /// deleting the account or unlinking the identity can revoke it. A failed exchange does not
    /// fail the sign-in (the user is who the ID token says); it is logged, and that identity
    /// then has nothing to revoke until a later sign-in or link brings a code that works.
    private func keepRefreshToken(of identity: VerifiedIdentity, code: String?) async {
        guard identity.provider == .apple, let code, !code.isEmpty else { return }
        guard let apple else {
            logger.debug("an Apple authorization code was sent but Apple's token endpoint is not configured (appleTeamId, appleKeyId, applePrivateKey)")
            return
        }
        do {
            let refresh = try await apple.client.exchange(code: code, subject: identity.subject, now: now)
            let sealed = Base64.encode(try apple.sealer.seal(Array(refresh.utf8), associatedData: Self.tokenContext))
            try await repository.storeRefreshToken(provider: "apple", subject: identity.subject, sealed: sealed, now: now)
        } catch {
            logger.warning("Apple's authorization code could not be exchanged; the identity has no refresh token to revoke", metadata: ["reason": "\(error)"])
        }
    }

    /// Associated data of every sealed provider token.
    static let tokenContext = Array("appd provider refresh token v1".utf8)

    /// Links the identity in a fresh ID token to the signed-in account.
    func linkIdentity(
        userID: String, provider name: String, idToken: String, nonce: String?, authorizationCode: String?, causedBy cause: (any Cause)?
    ) async throws -> Identity {
        let provider = try Self.provider(name)
        let identity = try await verifier.verify(idToken, provider: provider, rawNonce: nonce, now: now)
        switch try await repository.link(identity: identity, userID: userID, now: now, causedBy: cause) {
        case .linked: audit.notice("identity linked", metadata: ["user.id": "\(userID)", "provider": "\(provider.rawValue)"])
        case .alreadyLinked: break
        case .inUse: throw AuthError.identityInUse
        case .providerTaken: throw AuthError.providerAlreadyLinked(provider: provider.rawValue)
        }
        await keepRefreshToken(of: identity, code: authorizationCode)
        // A guest with a linked identity has a way in: it is upgraded in place, taking the
        // identity's email when no other account has it.
        if try await repository.user(id: userID)?.guest == true {
            if case .emailTaken = try await repository.upgradeGuest(
                userID: userID, email: identity.email, passwordHash: nil, emailVerified: identity.emailVerified, verification: nil, now: now,
                causedBy: cause)
            {
                _ = try await repository.upgradeGuest(
                    userID: userID, email: nil, passwordHash: nil, emailVerified: false, verification: nil, now: now, causedBy: cause)
            }
            audit.notice("guest upgraded", metadata: ["user.id": "\(userID)", "provider": "\(provider.rawValue)"])
        }
        return try await linked(provider, userID: userID)
    }

    /// The account's identity of `provider`, as ListIdentities shows it.
    private func linked(_ provider: IdentityProvider, userID: String) async throws -> Identity {
        guard let linked = try await repository.identities(userID: userID).first(where: { $0.provider == provider.rawValue }) else {
            throw AuthError.identityNotLinked
        }
        return Identity(linked)
    }

    /// Unlinks the account's identity of `provider`, unless it is its only way to sign in.
    func unlinkIdentity(userID: String, provider name: String, causedBy cause: (any Cause)?) async throws {
        let provider = try Self.provider(name)
        switch try await repository.unlink(provider: provider, userID: userID, now: now, causedBy: cause) {
        case .unlinked: audit.notice("identity unlinked", metadata: ["user.id": "\(userID)", "provider": "\(provider.rawValue)"])
        case .notLinked: throw AuthError.identityNotLinked
        case .lastSignInMethod: throw AuthError.lastSignInMethod
        }
    }

    func identities(userID: String) async throws -> [Identity] {
        try await repository.identities(userID: userID).map(Identity.init)
    }
}

extension Identity {
    init(_ record: IdentityRecord) {
        self.init(
            provider: record.provider, email: record.email, emailForwarding: !record.emailDisabled,
            linkedAt: WallTime(nanosecondsSinceEpoch: record.createdAt).rfc3339)
    }
}

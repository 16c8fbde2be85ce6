// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Storage

/// The auth rules: sign-up, sign-in with throttling and the constant-cost unknown-user path,
/// sessions with rotating refresh tokens. Knows nothing about the wire.
public struct AuthService: Sendable {
    public struct Options: Sendable {
        public var accessTokenLifetime: Duration = .seconds(3600)
        public var refreshTokenLifetime: Duration = .seconds(30 * 86_400)
        /// Wrong passwords one origin (an IPv4 address, an IPv6 /64, a local uid) may give for
        /// an account in `throttleWindow` before its attempts must wait.
        public var freeFailures = 5
        /// Wrong passwords from all origins together before every attempt on the account must
        /// wait: high, so a few guesses from elsewhere cannot lock the owner out.
        public var freeFailuresPerAccount = 100
        /// Reset requests recorded per email address in `noticeWindow` (more are answered
        /// alike and dropped).
        public var resetRequestsPerWindow = 3
        public var noticeWindow: Duration = .seconds(3600)
        public var throttleWindow: Duration = .seconds(15 * 60)
        public var scrypt: Scrypt.Parameters = .interactive
        public var resetTokenLifetime: Duration = .seconds(30 * 60)
        /// How long a verification request (and the token mailed for it) lasts.
        public var verificationLifetime: Duration = .seconds(24 * 3600)
        /// Refuse sign-in (EmailNotVerified) until the account's email is verified.
        public var requireVerifiedEmail = false
        /// The link into the app a reset mail carries (`IssueResetToken`'s `resetLink`).
        public var resetLink: ResetLinkTemplate?
        /// Whether SignInAnonymously makes guest accounts (off: GuestsDisabled).
        public var guestAccounts = false
        /// Guests not seen (signed in or refreshed) for this long are deleted.
        public var guestIdleLifetime: Duration = .seconds(30 * 86_400)
        /// How often idle guests are looked for.
        public var guestSweepInterval: Duration = .seconds(3600)
        public var maxPageSize = 200
        /// How long after a rotation the old refresh token still returns the pair it was
        /// rotated into (concurrent refreshes); after that its reuse revokes the family.
        public var refreshReuseInterval: Duration = .seconds(10)
        /// Resolved sessions kept in memory; 0 turns the cache off (see `SessionCache`).
        public var sessionCacheEntries = 10_000
        /// Sign-in with Apple and Google: the providers' client ids, key URLs, nonce checks.
        public var identity = IdentityOptions()
        public init() {}
    }

    let repository: AuthRepository
    let verifier: IdTokenVerifier
    /// Apple's token and revoke endpoints, and the key sealing its refresh tokens (nil when
    /// Apple's server side is not configured).
    let apple: (client: AppleClient, sealer: AESGCM)?
    let logger = Logger(label: "appd.auth")
    /// Changes to how an account signs in (identities linked or unlinked, deletion without a password).
    let audit = Logger(label: "appd.audit")
    let hasher: PasswordHasher
    let options: Options
    let clock: @Sendable () -> WallTime

    init(
        database: any Database, sessions: SessionCache<UserRecord>, streams: SessionStreams?, verifier: IdTokenVerifier,
        apple: (client: AppleClient, sealer: AESGCM)?, hasher: PasswordHasher, options: Options, clock: @escaping @Sendable () -> WallTime
    ) {
        self.apple = apple
        self.repository = AuthRepository(database: database, sessions: sessions, streams: streams)
        self.verifier = verifier
        self.hasher = hasher
        self.options = options
        self.clock = clock
    }

    var now: Int64 { clock().nanosecondsSinceEpoch }

    static func nanoseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
    }

    // MARK: Accounts

    /// Creates an account. A taken email is answered exactly as a new one — same work, same
    /// reply shape, a fresh id that leads nowhere — and its owner is told instead
    /// (`auth.signUpRepeated`), so sign-up tells nobody which emails have accounts (security
    /// review finding 10). Signing in then fails for whoever does not know the password.
    /// With `requireVerifiedEmail` off the reply carries a session: a real one for a new
    /// account, and for a taken email a decoy of the same shape (fresh random tokens that were
    /// never stored, so they fail at their first use) — the reply still tells nothing.
    func signUp(
        email rawEmail: String, password: String, displayName: String?, causedBy cause: (any Cause)?
    ) async throws
        -> AuthInterface.SignUpReply
    {
        let email = try AuthValidation.email(rawEmail)
        try AuthValidation.password(password, email: email)
        let name = try AuthValidation.displayName(displayName)
        let hash = try await hashing { try await hasher.hash(password) }
        let id = "u_" + (try SecretToken.generate().prefix(22))
        let now = self.now
        let verification = (id: "ev_" + (try SecretToken.generate().prefix(22)), expires: now + Self.nanoseconds(options.verificationLifetime))
        switch try await repository.createUser(
            id: id, email: email, passwordHash: hash, displayName: name, verification: verification, now: now,
            noticeWindow: Self.nanoseconds(options.noticeWindow), causedBy: cause)
        {
        case .created(let record):
            guard !options.requireVerifiedEmail else { return .init(user: record.user, session: nil) }
            return .init(user: record.user, session: try await openSession(for: record, family: try SecretToken.generate(), openedBy: nil, causedBy: cause))
        case .taken:
            let user = User(
                id: id, email: email, displayName: name, onboarded: false, emailVerified: false, guest: false,
                createdAt: WallTime(nanosecondsSinceEpoch: now).rfc3339)
            guard !options.requireVerifiedEmail else { return .init(user: user, session: nil) }
            let decoy = Session(
                accessToken: try SecretToken.generate(), refreshToken: try SecretToken.generate(),
                expiresAt: WallTime(nanosecondsSinceEpoch: now + Self.nanoseconds(options.accessTokenLifetime)).rfc3339, user: user)
            return .init(user: user, session: decoy)
        }
    }

    /// The throttle counters of a password check on `email` by `origin`.
    private func attemptKeys(_ email: String, _ origin: String) -> (account: AuthRepository.AttemptKey, origin: AuthRepository.AttemptKey) {
        AuthRepository.attemptKeys(email: email, origin: origin, freePerOrigin: options.freeFailures, freePerAccount: options.freeFailuresPerAccount)
    }

    /// Reserves a password check (throws TooManyAttempts when it must wait).
    private func reserve(_ keys: (account: AuthRepository.AttemptKey, origin: AuthRepository.AttemptKey)) async throws {
        let decision = try await repository.reserveAttempt([keys.account, keys.origin], now: now, window: Self.nanoseconds(options.throttleWindow))
        if case .wait(let seconds) = decision { throw AuthError.tooManyAttempts(retryAfterSeconds: seconds) }
    }

    /// Checks the password; unknown accounts cost a full derivation too and give the same error.
    func signIn(email rawEmail: String, password: String, origin: String, causedBy cause: (any Cause)?) async throws -> Session {
        guard let email = try? AuthValidation.email(rawEmail) else {
            try await hashing { try await hasher.verifyDummy(password) }
            throw AuthError.invalidCredentials
        }
        // Reserved before any password work: parallel guesses are counted one by one.
        let keys = attemptKeys(email, origin)
        try await reserve(keys)
        // An account without a password (made by an Apple or Google sign-in) costs the same.
        guard let record = try await repository.user(email: email), record.hasPassword else {
            try await hashing { try await hasher.verifyDummy(password) }
            throw AuthError.invalidCredentials
        }
        let (matches, needsRehash) = try await hashing { try await hasher.verify(password, against: record.passwordHash) }
        guard matches else { throw AuthError.invalidCredentials }
        guard !record.disabled else { throw AuthError.accountDisabled }
        try await repository.settleSuccess(account: keys.account, origin: keys.origin, now: now)
        guard record.emailVerified || !options.requireVerifiedEmail else { throw AuthError.emailNotVerified }
        if needsRehash, let fresh = try? await hasher.hash(password) {
            try await repository.replacePasswordHash(userID: record.id, hash: fresh, now: now)
        }
        return try await openSession(for: record, family: try SecretToken.generate(), openedBy: nil, causedBy: cause)
    }

    /// `openedBy`: the identity provider of the sign-in (nil: a password).
    func openSession(for record: UserRecord, family: String, openedBy: IdentityProvider?, causedBy cause: (any Cause)?) async throws -> Session {
        let access = try SecretToken.generate(), refresh = try SecretToken.generate()
        let now = self.now
        let expires = now + Self.nanoseconds(options.accessTokenLifetime)
        try await repository.createSession(
            userID: record.id, family: family, accessDigest: SecretToken.digest(access), accessExpires: expires,
            refreshDigest: SecretToken.digest(refresh), refreshExpires: now + Self.nanoseconds(options.refreshTokenLifetime), openedBy: openedBy?.rawValue,
            now: now, causedBy: cause)
        return Session(
            accessToken: access, refreshToken: refresh, expiresAt: WallTime(nanosecondsSinceEpoch: expires).rfc3339, user: record.user)
    }

    // MARK: Sessions

    /// The account behind an access token, as Authenticate and WhoAmI need it (a copy of the
    /// record; the session gate reads the cache's entry in place, `resolveEntry`).
    func resolve(accessToken: String) async throws -> UserRecord {
        try await resolveEntry(accessToken: accessToken).record
    }

    /// `resolve`, as the session's cache entry (what the session gate reads on a cache miss).
    func resolveEntry(accessToken: String) async throws -> SessionCache<UserRecord>.Entry {
        try Self.account(try await repository.session(accessToken: accessToken, now: now)).get()
    }

    /// `resolve` answered from the session cache alone, without waiting: nil when the token is
    /// not cached (then `resolve` reads the store). The cache's entry, not a copy of its record.
    func resolveCached(accessToken: String) -> Result<SessionCache<UserRecord>.Entry, AuthError>? {
        repository.cachedSession(accessToken: accessToken, now: now).map(Self.account)
    }

    /// The account a session lookup found, or why there is none to act as.
    private static func account(_ lookup: SessionLookup) -> Result<SessionCache<UserRecord>.Entry, AuthError> {
        switch lookup {
        case .unknown: .failure(.unauthenticated)
        case .expired: .failure(.sessionExpired)
        case .valid(let entry): entry.record.disabled ? .failure(.accountDisabled) : .success(entry)
        }
    }

    func refresh(refreshToken: String) async throws -> Session {
        let access = try SecretToken.generate(), refresh = try SecretToken.generate()
        let now = self.now
        let expires = now + Self.nanoseconds(options.accessTokenLifetime)
        let grace = Self.nanoseconds(options.refreshReuseInterval)
        let presented = SecretToken.digest(refreshToken)
        let pair = RotationSeal.Pair(accessToken: access, refreshToken: refresh, expiresAt: expires)
        let outcome = try await repository.rotate(
            refreshDigest: presented, newAccessDigest: SecretToken.digest(access), accessExpires: expires,
            newRefreshDigest: SecretToken.digest(refresh), refreshExpires: now + Self.nanoseconds(options.refreshTokenLifetime),
            handedOut: try RotationSeal.seal(pair, replacing: refreshToken), now: now, grace: grace)
        switch outcome {
        case .rotated(let record):
            return pair.session(record.user)
        case .recentlyRotated(let handedOut, let record):
            // The first rotation committed with its pair sealed (on whichever instance made it).
            guard let handedOut, let record, let first = RotationSeal.open(handedOut, replacing: refreshToken) else { throw AuthError.unauthenticated }
            return first.session(record.user)
        case .disabled: throw AuthError.accountDisabled
        case .reused, .unknown: throw AuthError.unauthenticated
        case .expired: throw AuthError.sessionExpired
        }
    }

    func signOut(accessToken: String, userID: String, causedBy cause: (any Cause)?) async throws {
        try await repository.revokeSession(accessDigest: SecretToken.digest(accessToken), userID: userID, now: now, causedBy: cause)
    }

    func signOutEverywhere(userID: String, causedBy cause: (any Cause)?) async throws {
        try await repository.revokeAllSessions(userID: userID, now: now, causedBy: cause)
    }

    func completeOnboarding(userID: String, causedBy cause: (any Cause)?) async throws -> User {
        guard let record = try await repository.completeOnboarding(userID: userID, now: now, causedBy: cause) else { throw AuthError.unauthenticated }
        return record.user
    }

    func updateProfile(userID: String, displayName: String?) async throws -> User {
        let name = try AuthValidation.displayName(displayName)
        guard let record = try await repository.updateProfile(userID: userID, displayName: name, now: now) else {
            throw AuthError.unauthenticated
        }
        return record.user
    }

    // MARK: Passwords

    /// Checks the current password under the same throttle as sign-in (a stolen access token
    /// is no unthrottled password oracle), on the account lane of the hashing threads.
    func changePassword(userID: String, accessToken: String, current: String, new: String, origin: String) async throws {
        guard let record = try await repository.user(id: userID) else { throw AuthError.unauthenticated }
        try await checkPassword(current, of: record, origin: origin)
        try AuthValidation.password(new, email: record.email)
        let hash = try await hashing { try await hasher.hash(new, lane: .account) }
        try await repository.changePassword(userID: userID, hash: hash, keepAccessDigest: SecretToken.digest(accessToken), now: now)
    }

    /// Records a reset request when the account exists, with a durable
    /// auth.passwordResetRequested in the same transaction. No token exists yet: a plugin with
    /// the `auth.resetTokens` capability mints it (`issueResetToken`). The caller's reply is
    /// the same whether or not the account exists.
    func requestPasswordReset(email rawEmail: String, causedBy cause: (any Cause)?) async throws {
        guard let email = try? AuthValidation.email(rawEmail) else { return }
        let id = "rr_" + (try SecretToken.generate().prefix(22))
        let now = self.now
        try await repository.requestReset(
            email: email, noticeKey: SecretToken.digest(email.lowercased()), id: id, expires: now + Self.nanoseconds(options.resetTokenLifetime), now: now,
            limit: options.resetRequestsPerWindow, window: Self.nanoseconds(options.noticeWindow), causedBy: cause)
    }

    /// Mints the one-time token of a pending reset request; only its digest is stored, and a
    /// second issue replaces the first. Unknown, used or expired requests are refused.
    func issueResetToken(requestID: String) async throws -> AuthInterface.IssuedResetToken {
        let token = try SecretToken.generate()
        guard let issued = try await repository.issueResetToken(requestID: requestID, digest: SecretToken.digest(token), now: now) else {
            throw AuthError.invalidResetToken
        }
        return .init(
            resetToken: token, email: issued.email, expiresAt: WallTime(nanosecondsSinceEpoch: issued.expires).rfc3339,
            resetLink: options.resetLink?.link(for: token))
    }

    /// Records a verification request for an unverified account with this email (the reply is
    /// the same whether or not one exists); the mailer mints and mails the token.
    func requestEmailVerification(email rawEmail: String, causedBy cause: (any Cause)?) async throws {
        guard let email = try? AuthValidation.email(rawEmail) else { return }
        let now = self.now
        try await repository.requestVerification(
            email: email, noticeKey: SecretToken.digest(email.lowercased()), id: "ev_" + (try SecretToken.generate().prefix(22)),
            expires: now + Self.nanoseconds(options.verificationLifetime), now: now, limit: options.resetRequestsPerWindow,
            window: Self.nanoseconds(options.noticeWindow), causedBy: cause)
    }

    func issueVerificationToken(requestID: String) async throws -> AuthInterface.IssuedVerificationToken {
        let token = try SecretToken.generate()
        guard let issued = try await repository.issueVerificationToken(requestID: requestID, digest: SecretToken.digest(token), now: now) else {
            throw AuthError.invalidVerificationToken
        }
        return .init(verificationToken: token, email: issued.email, expiresAt: WallTime(nanosecondsSinceEpoch: issued.expires).rfc3339)
    }

    func verifyEmail(token: String, keepingSessionOf accessToken: String? = nil, causedBy cause: (any Cause)?) async throws {
        guard try await repository.verifyEmail(digest: SecretToken.digest(token), keepAccessDigest: accessToken.map(SecretToken.digest), now: now, causedBy: cause)
        else { throw AuthError.invalidVerificationToken }
    }

    func resetPassword(token: String, new: String) async throws {
        let digest = SecretToken.digest(token)
        // No password work for a token that cannot be used.
        guard let owner = try await repository.resetTokenOwner(digest: digest, now: now) else { throw AuthError.invalidResetToken }
        try AuthValidation.password(new, email: owner.email)
        let hash = try await hashing { try await hasher.hash(new, lane: .account) }
        // Checked again in the write: a token used meanwhile is refused.
        guard try await repository.resetPassword(digest: digest, hash: hash, now: now) else { throw AuthError.invalidResetToken }
    }

    /// Deletes the account after the password is checked. An account without a password (made
    /// by Apple or Google) may instead delete when the calling session was opened by a sign-in
    /// within `reauthenticationWindow` (a fresh ID-token sign-in is such a re-authentication);
    /// an account with one always needs it, so a token stolen just after a sign-in cannot
    /// erase the account (security review 2, finding 6).
    func deleteAccount(userID: String, password: String?, accessToken: String, origin: String, causedBy cause: (any Cause)?) async throws {
        guard let record = try await repository.user(id: userID) else { throw AuthError.unauthenticated }
        if let password {
            try await checkPassword(password, of: record, origin: origin)
        } else if record.guest {
            // A guest has nothing to re-authenticate with: its session is all there is.
        } else if record.hasPassword {
            throw AuthError.reauthenticationRequired
        } else {
            guard let opened = try await repository.sessionOpened(accessDigest: SecretToken.digest(accessToken)),
                now - opened <= options.identity.reauthenticationWindow.nanoseconds
            else { throw AuthError.reauthenticationRequired }
            audit.notice("account deleted after a recent sign-in (no password given)", metadata: ["user.id": "\(userID)"])
        }
        try await repository.deleteUser(userID: userID, now: now, causedBy: cause)
    }

    /// A signed-in account's password, checked as a sign-in is (same throttle) on the account
    /// lane, so no account can take the threads that sign-in needs.
    private func checkPassword(_ password: String, of record: UserRecord, origin: String) async throws {
        let keys = attemptKeys(record.email, origin)
        try await reserve(keys)
        guard record.hasPassword else {
            try await hashing { try await hasher.verifyDummy(password) }
            throw AuthError.invalidCredentials
        }
        let (matches, _) = try await hashing { try await hasher.verify(password, against: record.passwordHash, lane: .account) }
        guard matches else { throw AuthError.invalidCredentials }
        try await repository.settleSuccess(account: keys.account, origin: keys.origin, now: now)
    }

    /// Runs password work, turning a full queue into the typed busy error.
    func hashing<T: Sendable>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch is PasswordHasherBusy {
            throw AuthError.busy
        }
    }
}

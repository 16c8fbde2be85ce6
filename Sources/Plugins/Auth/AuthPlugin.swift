// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import PluginKit
import Storage

/// Accounts and sessions (`io.appd.Auth`), and the session and onboarding gates.
public struct AuthPlugin: Plugin {
    public let manifest = PluginManifest(
        name: "auth", version: "0.1.0", interface: AuthInterface.idl, events: AuthEvents.all, configKeys: [])
    public var migrations: [Migration] { AuthMigrations.all }

    let options: AuthService.Options
    let hasher: PasswordHasher
    let clock: @Sendable () -> WallTime
    /// One per plugin: the gates' service and the handlers' share it.
    let sessions: SessionCache<UserRecord>
    /// One per plugin: the providers' key caches.
    let verifier: IdTokenVerifier
    let apple: (client: AppleClient, sealer: AESGCM)?

    public init(options: AuthService.Options = AuthService.Options(), clock: @escaping @Sendable () -> WallTime = { .now() }) throws {
        try self.init(options: options, keyFetch: nil, clock: clock)
    }

    /// `keyFetch` replaces the HTTPS fetch of the providers' keys, `applePost` the POSTs to
    /// Apple's token and revoke endpoints (tests).
    init(
        options: AuthService.Options, keyFetch: PublishedKeys.Fetch?, applePost: AppleClient.Post? = nil, clock: @escaping @Sendable () -> WallTime
    ) throws {
        for provider in IdentityProvider.allCases where options.identity[provider].enabled {
            guard options.identity[provider].keysURL.hasPrefix("https://") else {
                throw AuthConfigurationError("\(provider.rawValue)KeysUrl must be an https:// URL")
            }
        }
        self.verifier = IdTokenVerifier(options: options.identity, fetch: keyFetch)
        if let server = options.identity.appleServer {
            guard options.identity.apple.enabled else { throw AuthConfigurationError("Apple's token endpoint needs appleAudiences too") }
            guard let key = options.identity.tokenEncryptionKey, let sealer = try? AESGCM(key: key) else {
                throw AuthConfigurationError("Apple's refresh tokens need a 32-byte tokenEncryptionKey (kept out of the database)")
            }
            for url in [server.tokenURL, server.revokeURL] where !url.hasPrefix("https://") {
                throw AuthConfigurationError("Apple's token and revoke URLs must be https:// URLs")
            }
            self.apple = (try AppleClient(settings: server, caFile: options.identity.caFile, timeout: options.identity.fetchTimeout, post: applePost), sealer)
        } else {
            self.apple = nil
        }
        self.options = options
        self.hasher = try PasswordHasher(parameters: options.scrypt)
        self.clock = clock
        self.sessions = SessionCache(capacity: options.sessionCacheEntries)
    }

    /// With several instances on one database, a sign-out on another instance must take
    /// effect on this one's next call: the session cache follows the other instances' signals
    /// (`SessionCache.follow`); a database shared without signals bypasses it (every call reads
    /// the session from the database) rather than risk serving a revoked one.
    /// `streams` (the handlers' service) are woken after each commit that revokes sessions or
    /// changes an account's standing, so the user's open event streams check their session.
    func service(_ database: any Database, streams: SessionStreams? = nil) -> AuthService {
        var cache = sessions
        if database.sharedAcrossInstances {
            if let signals = database.signals { sessions.follow(signals) } else { cache = SessionCache(capacity: 0) }
        }
        return AuthService(
            database: database, sessions: cache, streams: streams,
            verifier: verifier, apple: apple, hasher: hasher, options: options, clock: clock)
    }

    public func gates(database: any Database) -> [any Gate] {
        [SessionGate(service: service(database)), AccountStandingGate.onboarding, AccountStandingGate.verifiedEmail]
    }

    public func start(_ context: PluginContext) async throws {
        let service = service(context.database, streams: context.bus.sessionStreams)
        // Another instance's sign-out or change of standing: this instance's streams of the
        // account check their session again (all of them when signals may have been lost).
        context.database.signals?.listen { [streams = context.bus.sessionStreams] signal in
            switch signal {
            case .missed: streams.changedAll()
            case .message(let message):
                if let eviction = SessionCache<UserRecord>.Eviction(signal: message) {
                    if let userID = eviction.userID { streams.changed(userID: userID) } else if eviction == .everything { streams.changedAll() }
                }
            }
        }
        let handlers = context.handlers
        handlers.handle(AuthInterface.SignUp.self) { command, envelope in
            try await service.signUp(email: command.email, password: command.password, displayName: command.displayName, causedBy: envelope)
        }
        handlers.answer(AuthInterface.CheckSignUp.self) { command, _ in
            let email = try AuthValidation.email(command.email)
            try AuthValidation.password(command.password, email: email)
            return Empty()
        }
        handlers.handle(AuthInterface.SignIn.self) { command, envelope in
            .init(session: try await service.signIn(email: command.email, password: command.password, origin: envelope.caller.origin, causedBy: envelope))
        }
        registerIdentityMethods(service, on: handlers)
        handlers.handle(AuthInterface.Authenticate.self) { command, envelope in
            let record = try await service.resolve(accessToken: command.accessToken)
            // Every later call on this connection carries the session (as Redis AUTH).
            envelope.caller.connection?.sessionToken = SessionToken(command.accessToken)
            return .init(user: record.user)
        }
        handlers.handle(AuthInterface.Refresh.self) { command, _ in
            .init(session: try await service.refresh(refreshToken: command.refreshToken))
        }
        handlers.handle(AuthInterface.SignOut.self) { _, envelope in
            let (token, principal) = try Self.signedIn(envelope)
            try await service.signOut(accessToken: token, userID: principal.userID, causedBy: envelope)
            if envelope.caller.connection?.sessionToken?.value == token { envelope.caller.connection?.sessionToken = nil }
            return Empty()
        }
        handlers.handle(AuthInterface.SignOutEverywhere.self) { _, envelope in
            let (_, principal) = try Self.signedIn(envelope)
            try await service.signOutEverywhere(userID: principal.userID, causedBy: envelope)
            envelope.caller.connection?.sessionToken = nil
            return Empty()
        }
        // From the session cache when it holds the token (as the session gate found it): such a
        // call is answered where the transport read it.
        handlers.answer(
            AuthInterface.WhoAmI.self,
            now: { _, envelope in
                let (token, _) = try Self.signedIn(envelope)
                return try service.resolveCached(accessToken: token).map { .init(user: try $0.get().record.user) }
            },
            later: { _, envelope in
                let (token, _) = try Self.signedIn(envelope)
                return .init(user: try await service.resolve(accessToken: token).user)
            })
        handlers.handle(AuthInterface.CompleteOnboarding.self) { _, envelope in
            .init(user: try await service.completeOnboarding(userID: try Self.signedIn(envelope).1.userID, causedBy: envelope))
        }
        handlers.handle(AuthInterface.UpdateProfile.self) { command, envelope in
            .init(user: try await service.updateProfile(userID: try Self.signedIn(envelope).1.userID, displayName: command.displayName))
        }
        handlers.handle(AuthInterface.SetAvatar.self) { [bus = context.bus] command, envelope in
            .init(user: try await service.setAvatar(userID: try Self.signedIn(envelope).1.userID, fileID: command.fileId, bus: bus, causedBy: envelope))
        }
        registerAccountMethods(service, on: handlers)
        handlers.handleInProcess(LookupAccount.self) { command, _ in
            var record: UserRecord?
            if let email = command.email { record = try await service.repository.user(email: email.trimmingWhitespace()) }
            if record == nil, let id = command.userID { record = try await service.repository.user(id: id) }
            return .init(userID: record?.id, email: record?.address)
        }
    }

    /// `POST /webhooks/apple` (Apple's server-to-server notifications) on the app-facing HTTP server.
    public func httpRoutes(_ context: PluginContext) -> [PluginHTTPRoute] {
        let notifications = AppleNotifications(service: service(context.database, streams: context.bus.sessionStreams))
        return [PluginHTTPRoute(.exact("/webhooks/apple")) { request, body in await notifications.handle(request, body) }]
    }

    /// The revocation of queued provider tokens, when Apple's server side is configured.
    public func services(_ context: PluginContext) -> [any Service] {
        let repository = service(context.database, streams: context.bus.sessionStreams).repository
        var services: [any Service] = [
            GuestSweepService(repository: repository, clock: clock, idle: options.guestIdleLifetime, interval: options.guestSweepInterval, logger: context.logger)
        ]
        if let apple {
            services.append(
                TokenRevocationService(repository: repository, apple: apple, clock: clock, interval: options.identity.revocationInterval, logger: context.logger))
        }
        return services
    }

    /// Sign-in with Apple and Google, and the account's linked identities.
    private func registerIdentityMethods(_ service: AuthService, on handlers: HandlerSet) {
        handlers.handle(AuthInterface.SignInWithIdToken.self) { command, envelope in
            try await service.signInWithIdToken(
                provider: command.provider, idToken: command.idToken, nonce: command.nonce, fullName: command.fullName,
                authorizationCode: command.authorizationCode, causedBy: envelope)
        }
        handlers.handle(AuthInterface.SignInAnonymously.self) { _, envelope in
            .init(session: try await service.signInAnonymously(causedBy: envelope))
        }
        handlers.handle(AuthInterface.UpgradeGuest.self) { command, envelope in
            .init(user: try await service.upgradeGuest(userID: try Self.signedIn(envelope).1.userID, email: command.email, password: command.password, causedBy: envelope))
        }
        handlers.handle(AuthInterface.ListIdentities.self) { _, envelope in
            .init(identities: try await service.identities(userID: try Self.signedIn(envelope).1.userID))
        }
        handlers.handle(AuthInterface.LinkIdentity.self) { command, envelope in
            .init(
                identity: try await service.linkIdentity(
                    userID: try Self.signedIn(envelope).1.userID, provider: command.provider, idToken: command.idToken, nonce: command.nonce,
                    authorizationCode: command.authorizationCode, causedBy: envelope))
        }
        handlers.handle(AuthInterface.UnlinkIdentity.self) { command, envelope in
            try await service.unlinkIdentity(userID: try Self.signedIn(envelope).1.userID, provider: command.provider, causedBy: envelope)
            return Empty()
        }
    }

    /// Password, account and administration methods.
    private func registerAccountMethods(_ service: AuthService, on handlers: HandlerSet) {
        handlers.handle(AuthInterface.ChangePassword.self) { command, envelope in
            let (token, principal) = try Self.signedIn(envelope)
            try await service.changePassword(
                userID: principal.userID, accessToken: token, current: command.currentPassword, new: command.newPassword, origin: envelope.caller.origin)
            return Empty()
        }
        handlers.handle(AuthInterface.RequestPasswordReset.self) { command, envelope in
            try await service.requestPasswordReset(email: command.email, causedBy: envelope)
            return Empty()
        }
        handlers.handle(AuthInterface.IssueResetToken.self) { command, _ in
            try await service.issueResetToken(requestID: command.requestId)
        }
        handlers.handle(AuthInterface.RequestEmailVerification.self) { command, envelope in
            try await service.requestEmailVerification(email: command.email, causedBy: envelope)
            return Empty()
        }
        handlers.handle(AuthInterface.IssueVerificationToken.self) { command, _ in
            try await service.issueVerificationToken(requestID: command.requestId)
        }
        handlers.handle(AuthInterface.VerifyEmail.self) { command, envelope in
            // The caller's own session (when it is signed in) is the one the first verification keeps.
            let keep = envelope.caller.principal == nil ? nil : envelope.caller.sessionToken?.value
            try await service.verifyEmail(token: command.verificationToken, keepingSessionOf: keep, causedBy: envelope)
            return Empty()
        }
        handlers.handle(AuthInterface.ResetPassword.self) { command, _ in
            try await service.resetPassword(token: command.resetToken, new: command.newPassword)
            return Empty()
        }
        handlers.handle(AuthInterface.DeleteAccount.self) { command, envelope in
            let (token, principal) = try Self.signedIn(envelope)
            try await service.deleteAccount(
                userID: principal.userID, password: command.password, accessToken: token, origin: envelope.caller.origin, causedBy: envelope)
            envelope.caller.connection?.sessionToken = nil
            return Empty()
        }
        handlers.handle(AuthInterface.ListUsers.self) { command, _ in
            try await service.listUsers(cursor: command.cursor, limit: command.limit, search: command.search)
        }
        handlers.handle(AuthInterface.GetUser.self) { command, _ in
            try await service.user(email: command.email)
        }
        handlers.handle(AuthInterface.DeleteUser.self) { command, envelope in
            try await service.deleteUser(email: command.email, causedBy: envelope)
            return Empty()
        }
        handlers.handle(AuthInterface.DisableUser.self) { command, _ in
            try await service.setDisabled(email: command.email, true)
            return Empty()
        }
        handlers.handle(AuthInterface.EnableUser.self) { command, _ in
            try await service.setDisabled(email: command.email, false)
            return Empty()
        }
    }

    /// The session token and principal the session gate established.
    static func signedIn(_ envelope: Envelope) throws -> (String, Principal) {
        guard let principal = envelope.caller.principal, let token = envelope.caller.sessionToken?.value else {
            throw AuthError.unauthenticated
        }
        return (token, principal)
    }
}

/// The auth plugin's configuration cannot be used (the plugin is listed as failed with it).
public struct AuthConfigurationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

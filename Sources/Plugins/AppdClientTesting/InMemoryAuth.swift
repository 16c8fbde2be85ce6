// SPDX-License-Identifier: Apache-2.0
import AppdClient
import BusCore
import Contracts
import Foundation

/// Accounts in memory with appd's answers (wrong password and unknown address both
/// `invalidCredentials`, a taken address on sign-up `validationFailed`, guests upgraded in
/// place), and `states()` moving as `AppdClient`'s does. For a session controller's tests.
/// `acceptIdToken(_:for:)` makes an ID token good for Sign in with Apple or Google;
/// `endSession(_:)` ends the session as appd refusing a refresh would.
public actor InMemoryAuth: AuthServing {
    private struct Account {
        var user: User
        var password: String?
    }

    private var accounts: [String: Account] = [:]
    private var idTokens: [String: String] = [:]
    private var current: User?
    private var state: AuthState = .signedOut
    private var listeners: [Int: AsyncStream<AuthState>.Continuation] = [:]
    private var nextListener = 0

    public init() {}

    /// An account that exists before the test starts (onboarded unless said otherwise).
    @discardableResult
    public func register(email: String, password: String, onboarded: Bool = true) -> User {
        let user = Self.user(email: email, onboarded: onboarded, guest: false)
        accounts[user.id] = Account(user: user, password: password)
        return user
    }

    /// Makes `token` a valid ID token for the account of `email` (created at first sign-in).
    public func acceptIdToken(_ token: String, for email: String) { idTokens[token] = email }

    /// Ends the session without the user signing out here (another device signed out
    /// everywhere, the account was disabled): `states()` says `sessionEnded(reason)`.
    public func endSession(_ reason: SessionEndReason) {
        current = nil
        move(to: .sessionEnded(reason))
    }

    public func states() -> AsyncStream<AuthState> {
        let (stream, continuation) = AsyncStream.makeStream(of: AuthState.self, bufferingPolicy: .bufferingNewest(8))
        let id = nextListener
        nextListener += 1
        listeners[id] = continuation
        // Unstructured: `onTermination` is synchronous: this hops onto the actor to forget the listener.
        continuation.onTermination = { _ in Task { await self.forget(id) } }
        continuation.yield(state)
        return stream
    }

    public func signUp(email: String, password: String, displayName: String?) throws -> User {
        guard email.contains("@") else { throw AuthError.validationFailed(field: "email", reason: "not an email address") }
        guard password.utf8.count >= 10 else { throw AuthError.validationFailed(field: "password", reason: "at least 10 characters") }
        guard account(email: email) == nil else { throw AuthError.validationFailed(field: "email", reason: "already registered") }
        var user = Self.user(email: email, onboarded: false, guest: false)
        user.displayName = displayName
        accounts[user.id] = Account(user: user, password: password)
        signIn(user)
        return user
    }

    public func signIn(email: String, password: String) throws -> User {
        guard let account = account(email: email), account.password == password else { throw AuthError.invalidCredentials }
        signIn(account.user)
        return account.user
    }

    public func signIn(with provider: SignInProvider, idToken: String, nonce: SignInNonce?, fullName: String?) throws -> User {
        guard let email = idTokens[idToken] else { throw AuthError.invalidIdToken(reason: .signature) }
        let user =
            account(email: email)?.user
            ?? {
                let user = Self.user(email: email, onboarded: false, guest: false)
                accounts[user.id] = Account(user: user, password: nil)
                return user
            }()
        signIn(user)
        return user
    }

    public func signInAsGuest() -> User {
        let user = Self.user(email: "", onboarded: false, guest: true)
        accounts[user.id] = Account(user: user, password: nil)
        signIn(user)
        return user
    }

    public func upgradeGuest(email: String, password: String) throws -> User {
        guard var user = current else { throw AuthError.unauthenticated }
        guard user.guest else { throw AuthError.notAGuest }
        guard account(email: email) == nil else { throw AuthError.validationFailed(field: "email", reason: "already registered") }
        user.email = email
        user.guest = false
        accounts[user.id] = Account(user: user, password: password)
        signIn(user)
        return user
    }

    public func currentUser() throws -> User {
        guard let current else { throw AppdClientError.notSignedIn }
        return current
    }

    public func completeOnboarding() throws -> User {
        guard var user = current else { throw AppdClientError.notSignedIn }
        user.onboarded = true
        accounts[user.id]?.user = user
        signIn(user)
        return user
    }

    /// Any id is taken as an image the user uploaded (files are not simulated here).
    public func setAvatar(fileId: String?) throws -> User {
        guard var user = current else { throw AppdClientError.notSignedIn }
        user.avatarFileId = fileId
        accounts[user.id]?.user = user
        signIn(user)
        return user
    }

    public func requestPasswordReset(email: String) {}

    public func signOut() {
        current = nil
        move(to: .signedOut)
    }

    public func deleteAccount(password: String?) throws {
        guard let user = current else { throw AppdClientError.notSignedIn }
        if let stored = accounts[user.id]?.password, stored != password { throw AuthError.invalidCredentials }
        accounts[user.id] = nil
        signOut()
    }

    // MARK: -

    private func account(email: String) -> Account? {
        accounts.values.first { !$0.user.guest && $0.user.email.lowercased() == email.lowercased() }
    }

    private func signIn(_ user: User) {
        current = user
        move(to: .signedIn(user))
    }

    private func move(to new: AuthState) {
        guard new != state else { return }
        state = new
        for listener in listeners.values { listener.yield(new) }
    }

    private func forget(_ id: Int) { listeners[id] = nil }

    private static func user(email: String, onboarded: Bool, guest: Bool) -> User {
        User(id: "u_" + UUID().uuidString.lowercased(), email: email, onboarded: onboarded, emailVerified: false, guest: guest, createdAt: WallTime.now().rfc3339)
    }
}

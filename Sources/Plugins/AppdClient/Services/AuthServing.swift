// SPDX-License-Identifier: Apache-2.0
import Contracts

/// What a session controller and the sign-in screens need from a server: `AppdClient.auth`, or
/// `InMemoryAuth` (the `AppdClientTesting` product) in a view model's tests. Every sign-in
/// moves `states()`; the session is kept by the implementation (a `TokenStore` for appd).
public protocol AuthServing: Sendable {
    /// The auth state now, then every change (`signedOut`, `signedIn(user)`, `sessionEnded`).
    func states() async -> AsyncStream<AuthState>
    /// A new account; signed in unless the server asks for a verified email first (then the
    /// reply's user is unverified and the state stays `signedOut`).
    func signUp(email: String, password: String, displayName: String?) async throws -> User
    func signIn(email: String, password: String) async throws -> User
    /// Sign in with Apple or Google: the provider's ID token and the nonce the request was
    /// made with (`SignInNonce`).
    func signIn(with provider: SignInProvider, idToken: String, nonce: SignInNonce?, fullName: String?) async throws -> User
    func signInAsGuest() async throws -> User
    func upgradeGuest(email: String, password: String) async throws -> User
    func currentUser() async throws -> User
    func completeOnboarding() async throws -> User
    /// Makes an uploaded image (`AppdClient.upload`) the profile picture (nil: none); the
    /// previous one is deleted.
    func setAvatar(fileId: String?) async throws -> User
    func requestPasswordReset(email: String) async throws
    func signOut() async
    /// Deletes the account (its password, when it has one) and signs out.
    func deleteAccount(password: String?) async throws
}

extension AuthServing {
    public func signUp(email: String, password: String) async throws -> User {
        try await signUp(email: email, password: password, displayName: nil)
    }
    public func signIn(with provider: SignInProvider, idToken: String, nonce: SignInNonce?) async throws -> User {
        try await signIn(with: provider, idToken: idToken, nonce: nonce, fullName: nil)
    }
}

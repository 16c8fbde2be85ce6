// SPDX-License-Identifier: Apache-2.0
import Contracts

/// Where the client keeps the signed-in session between launches: the app provides one over
/// the Keychain (`kSecClassGenericPassword`, `kSecAttrAccessibleAfterFirstUnlock`), as the
/// template's `AuthClient` does. Saved on every sign-in and every refresh (the refresh token
/// rotates: the old one must never be presented again), cleared on sign-out.
public protocol TokenStore: Sendable {
    func load() async -> Session?
    func save(_ session: Session) async
    func clear() async
}

/// Keeps the session in memory only: for tests and for apps that sign in on every launch.
public actor InMemoryTokenStore: TokenStore {
    private var session: Session?
    public init(_ session: Session? = nil) { self.session = session }
    public func load() -> Session? { session }
    public func save(_ session: Session) { self.session = session }
    public func clear() { session = nil }
}

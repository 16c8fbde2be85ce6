// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

/// The signed-in session, as the template's `AuthClient` keeps it: loaded from the app's
/// `TokenStore`, adopted from every reply that carries one (sign-up, sign-in, ID-token and
/// guest sign-in, refresh), refreshed shortly before it expires and once after a 401, and
/// cleared on sign-out or when appd refuses the refresh token.
///
/// Refreshes are serialized: the refresh token rotates with each one and appd treats a spent
/// token presented again as theft (it revokes the whole session family), so two calls that
/// both find the token old share one refresh, and the new session is saved before it is used.
///
/// Every change of the session moves its `AuthState`, which `states()` delivers to each
/// listener, the current state first.
public actor SessionManager {
    let store: any TokenStore
    /// How long before `expiresAt` a session is refreshed.
    let margin: Duration
    private var loaded = false
    private var session: Session?
    private var refreshing: Task<Session, any Error>?
    private var state = AuthState.signedOut
    private var listeners: [Int: AsyncStream<AuthState>.Continuation] = [:]
    private var nextListener = 0

    init(store: any TokenStore, margin: Duration) {
        self.store = store
        self.margin = margin
    }

    /// The session in use, if any.
    public var current: Session? {
        get async {
            await load()
            return session
        }
    }

    /// The auth state now, then every change, in order (a listener that falls 16 changes behind
    /// loses the oldest). Ends when the listener stops iterating.
    public func states() async -> AsyncStream<AuthState> {
        await load()
        let (stream, continuation) = AsyncStream<AuthState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = nextListener
        nextListener += 1
        listeners[id] = continuation
        continuation.yield(state)
        continuation.onTermination = { [weak self] _ in
            // Unstructured: `onTermination` is synchronous: this hops onto the actor to forget the listener.
            Task { await self?.forget(id) }
        }
        return stream
    }

    /// The auth state now.
    public var currentState: AuthState {
        get async {
            await load()
            return state
        }
    }

    func adopt(_ new: Session) async {
        session = new
        loaded = true
        move(to: .signedIn(new.user))
        await store.save(new)
    }

    /// The signed-in user changed (onboarded, renamed, a guest upgraded): kept with the session.
    func update(_ user: User) async {
        guard var changed = session, changed.user.id == user.id, changed.user != user else { return }
        changed.user = user
        await adopt(changed)
    }

    /// Forgets the session: the user signed out (`signedOut`), or appd ended it (`ended`).
    func clear(ended: SessionEndReason? = nil) async {
        session = nil
        loaded = true
        refreshing?.cancel()
        refreshing = nil
        move(to: ended.map { .sessionEnded($0) } ?? .signedOut)
        await store.clear()
    }

    private func move(to new: AuthState) {
        guard new != state else { return }
        state = new
        for listener in listeners.values { listener.yield(new) }
    }

    private func forget(_ id: Int) {
        listeners[id] = nil
    }

    /// A usable access token, refreshed first when it expires within the margin.
    func accessToken(_ refresh: @escaping @Sendable (String) async throws -> Session) async throws -> String {
        await load()
        guard let session else { throw AppdClientError.notSignedIn }
        guard let expiry = RFC3339.parse(session.expiresAt),
            expiry.nanosecondsSinceEpoch - WallTime.now().nanosecondsSinceEpoch <= margin.nanoseconds
        else { return session.accessToken }
        return try await refreshed(replacing: session.accessToken, refresh).accessToken
    }

    /// A session newer than the one whose access token was `stale` (refused or about to
    /// expire): another caller's refresh when one happened meanwhile, otherwise a new one.
    func refreshed(replacing stale: String, _ refresh: @escaping @Sendable (String) async throws -> Session) async throws -> Session {
        await load()
        if let session, session.accessToken != stale { return session }
        if let refreshing { return try await refreshing.value }
        guard let refreshToken = session?.refreshToken else { throw AppdClientError.notSignedIn }
        // Unstructured: one refresh shared by every concurrent caller (kept in `refreshing`), each awaiting it.
        let task = Task { try await refresh(refreshToken) }
        refreshing = task
        defer { refreshing = nil }
        do {
            let new = try await task.value
            await adopt(new)
            return new
        } catch let error as AuthError {
            // appd busy now is no reason to sign the user out: the next call tries again.
            if case .busy = error { throw error }
            if case .tooManyAttempts = error { throw error }
            // The refresh token is spent, revoked or expired: the user signs in again.
            await clear(ended: SessionEndReason(error))
            throw error
        }
    }

    private func load() async {
        guard !loaded else { return }
        loaded = true
        session = await store.load()
        if let session { move(to: .signedIn(session.user)) }
    }
}

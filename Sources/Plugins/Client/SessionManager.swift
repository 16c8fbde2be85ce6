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
public actor SessionManager {
    let store: any TokenStore
    /// How long before `expiresAt` a session is refreshed.
    let margin: Duration
    private var loaded = false
    private var session: Session?
    private var refreshing: Task<Session, any Error>?

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

    func adopt(_ new: Session) async {
        session = new
        loaded = true
        await store.save(new)
    }

    func clear() async {
        session = nil
        loaded = true
        refreshing?.cancel()
        refreshing = nil
        await store.clear()
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
        let task = Task { try await refresh(refreshToken) }
        refreshing = task
        defer { refreshing = nil }
        do {
            let new = try await task.value
            await adopt(new)
            return new
        } catch let error as AuthError {
            // The refresh token is spent, revoked or expired: the user signs in again.
            await clear()
            throw error
        }
    }

    private func load() async {
        guard !loaded else { return }
        loaded = true
        session = await store.load()
    }
}

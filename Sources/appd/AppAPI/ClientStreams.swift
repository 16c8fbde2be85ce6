import Bus
import Synchronization

/// Event streams open per client network (`NetworkAddress.client`), so one address cannot
/// hold the server's streams while others get 503 (security review finding 8; each account's
/// Subscribe streams are capped by the bus as well, over both transports).
public final class ClientStreams: Sendable {
    private let limit: Int
    private let open = Mutex<[String: Int]>([:])

    public init(limit: Int) { self.limit = max(1, limit) }

    /// Takes a slot for `client`; false when it already holds `limit` streams.
    public func take(_ client: String) -> Bool {
        let key = NetworkAddress.client(client)
        return open.withLock { table in
            guard table[key, default: 0] < limit else { return false }
            table[key, default: 0] += 1
            return true
        }
    }

    /// Gives a slot back.
    public func release(_ client: String) {
        let key = NetworkAddress.client(client)
        open.withLock { table in
            let left = table[key, default: 0] - 1
            table[key] = left > 0 ? left : nil
        }
    }
}

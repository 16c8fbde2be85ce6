import Bus
import Synchronization

/// Per-client-address rate limits for the abuse-prone unauthenticated methods: a token
/// bucket per address (`perMinute` tokens, refilled evenly), in a bounded table that forgets
/// the least recently seen addresses first — a tenth of the table at once, so a flood of new
/// addresses costs one sort per tenth of the table, not a scan of it per request.
final class ClientLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }
    private let perMinute: Int
    private let capacity: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    init(perMinute: Int, trackedClients: Int) {
        self.perMinute = perMinute
        self.capacity = max(1, trackedClients)
    }

    /// Takes a token for `client`'s network (`NetworkAddress.client`): nil when allowed, else
    /// the seconds to wait.
    func take(_ client: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard perMinute > 0 else { return nil }
        let client = NetworkAddress.client(client)
        let rate = Double(perMinute) / 60
        return buckets.withLock { table -> Int? in
            var bucket = table[client] ?? Bucket(tokens: Double(perMinute), updated: now)
            bucket.tokens = min(Double(perMinute), bucket.tokens + rate * (now - bucket.updated).inSeconds)
            bucket.updated = now
            defer {
                if table[client] == nil && table.count >= capacity { Self.forgetOldest(in: &table, keeping: capacity - max(1, capacity / 10)) }
                table[client] = bucket
            }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }

    /// How many addresses the table holds.
    var tracked: Int { buckets.withLock { $0.count } }

    private static func forgetOldest(in table: inout [String: Bucket], keeping: Int) {
        let newest = table.sorted { $0.value.updated > $1.value.updated }.prefix(keeping)
        table = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }
}

/// The client's address: the peer's, or — when the peer is a trusted proxy — the nearest
/// address in `X-Forwarded-For` that is not itself a trusted proxy.
enum ClientAddress {
    static func of(_ request: HTTPServerRequest, trustedProxies: Set<String>) -> String {
        guard trustedProxies.contains(request.peerAddress), let forwarded = request.headers["x-forwarded-for"] else { return request.peerAddress }
        let hops = forwarded.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        return hops.last { !trustedProxies.contains($0) } ?? request.peerAddress
    }
}

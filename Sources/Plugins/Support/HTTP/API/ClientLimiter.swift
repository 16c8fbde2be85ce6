#if canImport(Glibc)
import Glibc
#endif
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

    /// Takes a token for `client`'s network (`ClientAddress.network`): nil when allowed, else
    /// the seconds to wait.
    func take(_ client: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard perMinute > 0 else { return nil }
        let client = ClientAddress.network(client)
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

    /// What one client controls, as rate limits count it: an IPv4 address, or an IPv6
    /// address's /64 (one host is routinely given a whole /64, so counting each address apart
    /// would give it 2^64 buckets; security review finding 12). IPv4-mapped IPv6 counts as
    /// its IPv4 address. Anything unparsable counts as itself.
    static func network(_ address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let parsed = address.withCString { inet_pton(AF_INET6, $0, &bytes) } == 1
        guard parsed else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        var groups: [String] = []
        for i in stride(from: 0, to: 8, by: 2) { groups.append(String(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]), radix: 16)) }
        return groups.joined(separator: ":") + "::/64"
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// Event streams open per client network (`NetworkAddress.client`), so one address cannot
/// hold the server's streams while others get 503 (security review finding 8; each account's
/// Subscribe streams are capped by the bus as well, over both transports).
///
/// A share of the server's streams is kept for clients holding few: once the streams open reach
/// `reserveFrom` (three quarters of the server's `maxStreams`), an address already holding
/// `fewStreams` or more gets no more. Sixteen addresses at their full 16 could otherwise hold all
/// 256 and lock every other app out (security review 2, finding 9); now they hold at most three
/// quarters, and the rest serves addresses that have one stream or none.
public final class ClientStreams: Sendable {
    private let limit: Int
    private let reserveFrom: Int
    /// Streams an address may hold once the reserve is in use.
    static let fewStreams = 2

    private struct State {
        var open: [String: Int] = [:]
        var total = 0
    }

    private let state = Mutex(State())

    /// `serverLimit`: the HTTP server's `maxStreams` (nil: no reserve).
    public init(limit: Int, serverLimit: Int? = nil) {
        self.limit = max(1, limit)
        self.reserveFrom = serverLimit.map { max(1, $0 * 3 / 4) } ?? Int.max
    }

    /// Why `client` may not open one more stream (its own limit, or the share kept for
    /// others), or nil after taking a slot for it.
    public func take(_ client: String) -> Refusal? {
        let key = NetworkAddress.client(client)
        return state.withLock { s in
            let held = s.open[key, default: 0]
            guard held < limit else { return .perClient(limit) }
            guard s.total < reserveFrom || held < Self.fewStreams else { return .reserved(Self.fewStreams) }
            s.open[key] = held + 1
            s.total += 1
            return nil
        }
    }

    /// Gives a slot back.
    public func release(_ client: String) {
        let key = NetworkAddress.client(client)
        state.withLock { s in
            guard let held = s.open[key] else { return }
            s.open[key] = held > 1 ? held - 1 : nil
            s.total -= 1
        }
    }

    /// Why a stream was refused: the address's own limit, or the server is busy and what is left
    /// is kept for addresses holding fewer than this many.
    public enum Refusal: Equatable, Sendable {
        case perClient(Int)
        case reserved(Int)

        var limit: Int {
            switch self {
            case .perClient(let n), .reserved(let n): n
            }
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// `appd_http_responses_total`'s series, kept by (route, status): a response costs one small
/// lookup, not a label array hashed in the registry. Bounded: routes are the API's own names,
/// statuses three digits.
final class ResponseCounters: Sendable {
    private struct Key: Hashable {
        let route: String
        let status: Int
    }
    private let known = Mutex<[Key: Metrics.CounterSeries]>([:])

    func counter(route: String, status: Int) -> Metrics.CounterSeries {
        let key = Key(route: route, status: status)
        if let hit = known.withLock({ $0[key] }) { return hit }
        let made = Metrics.shared.counter(
            "appd_http_responses_total", help: "HTTP responses by route and status.", labels: [("route", route), ("status", String(status))])
        known.withLock { $0[key] = made }
        return made
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// What the metrics page charts: per method (and transport), the calls so far and their
/// latency histogram, read from the process's Prometheus registry. The page takes two
/// snapshots' difference for calls per second and the 99th percentile over that interval.
enum ConsoleMetrics {
    static func snapshot() -> JSONValue {
        let series = Metrics.shared.histogram("appd_call_duration_seconds")
        let bounds = series.first?.bounds ?? Metrics.latencyBuckets
        let methods = series.sorted { $0.labels.lexicographicallyPrecedes($1.labels) }.map { sample -> JSONValue in
            [
                "method": .string(sample.labels.first ?? ""), "transport": .string(sample.labels.dropFirst().first ?? ""),
                "count": .int(Int64(clamping: sample.count)), "sum": .double(sample.sum),
                "buckets": .array(sample.counts.map { .int(Int64(clamping: $0)) }),
            ]
        }
        return ["at": .double(WallTime.now().secondsSinceEpoch), "bounds": .array(bounds.map(JSONValue.double)), "methods": .array(methods)]
    }
}

/// The metrics page's recent past: a snapshot every `interval` (taken by `ConsoleService` while
/// the console runs), the newest `kept` of them, so the page shows the last minute the moment it
/// opens instead of starting empty. Bounded: `kept` snapshots of the method table.
final class ConsoleMetricsHistory: Sendable {
    static let interval = Duration.seconds(2)
    let kept: Int
    private let samples = Mutex<[JSONValue]>([])

    init(kept: Int = 30) { self.kept = max(2, kept) }

    func record() {
        let snapshot = ConsoleMetrics.snapshot()
        samples.withLock {
            $0.append(snapshot)
            if $0.count > kept { $0.removeFirst($0.count - kept) }
        }
    }

    /// Now, with the snapshots before it, oldest first (`history`).
    func current() -> JSONValue {
        guard case .object(var now) = ConsoleMetrics.snapshot() else { return ConsoleMetrics.snapshot() }
        now["history"] = .array(samples.withLock { $0 })
        return .object(now)
    }
}

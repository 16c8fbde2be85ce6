// SPDX-License-Identifier: Apache-2.0
import Bus

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

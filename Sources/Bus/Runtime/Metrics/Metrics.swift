// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization

/// The process's counters and histograms, rendered in the Prometheus text exposition format
/// (`GET /metrics`). One registry per process, as swift-metrics bootstraps one: the places
/// that count (the dispatcher, the gate chain, the database writer) need no wiring, and a
/// scrape sees everything. Gauges are read at scrape time from `collectors`.
///
/// Series are keyed by metric name and label values; label values come from appd's own
/// vocabulary (method names of served interfaces, error names, gate names), never from a
/// client's free text, so the number of series stays bounded.
public final class Metrics: Sendable {
    public static let shared = Metrics()

    /// Buckets of latency histograms, in seconds.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Buckets of group-commit batch sizes.
    public static let batchBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]

    struct Key: Hashable {
        var name: String
        var labels: [String]
    }
    struct Histogram {
        var buckets: [Double]
        var counts: [UInt64]
        var sum = 0.0
        var count: UInt64 = 0

        mutating func record(_ value: Double) {
            if let index = buckets.firstIndex(where: { value <= $0 }) { counts[index] &+= 1 }
            sum += value
            count &+= 1
        }
    }

    /// One counter series: kept by a caller that counts often (`CallMetrics`), it counts with
    /// one atomic add (no lookup, no lock).
    public final class CounterSeries: Sendable {
        let value = Atomic<UInt64>(0)
        public func add(_ by: UInt64 = 1) { value.add(by, ordering: .relaxed) }
    }

    /// One histogram series, kept the same way: one observation takes its own lock only.
    public final class HistogramSeries: Sendable {
        let histogram: Mutex<Histogram>
        init(buckets: [Double]) { histogram = Mutex(Histogram(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))) }
        public func observe(_ value: Double) { histogram.withLock { $0.record(value) } }
    }
    struct Family {
        var help: String
        var type: String
        var labelNames: [String]
    }
    struct State {
        var families: [String: Family] = [:]
        var counters: [Key: CounterSeries] = [:]
        var histograms: [Key: HistogramSeries] = [:]
    }

    /// A gauge read at scrape time: its samples as (label values, value).
    public struct Collector: Sendable {
        public var name: String
        public var help: String
        public var labelNames: [String]
        public var samples: @Sendable () async -> [([String], Double)]
        public init(name: String, help: String, labelNames: [String] = [], samples: @escaping @Sendable () async -> [([String], Double)]) {
            self.name = name
            self.help = help
            self.labelNames = labelNames
            self.samples = samples
        }
    }

    private let state = Mutex(State())
    private let collectors = Mutex<[String: Collector]>([:])

    public init() {}

    /// Adds `by` to a counter.
    public func increment(_ name: String, help: String, labels: [(String, String)] = [], by: UInt64 = 1) {
        counter(name, help: help, labels: labels).add(by)
    }

    /// Records one observation in a histogram.
    public func observe(_ name: String, help: String, labels: [(String, String)] = [], value: Double, buckets: [Double] = Metrics.latencyBuckets) {
        histogram(name, help: help, labels: labels, buckets: buckets).observe(value)
    }

    /// The series of a counter (made on first use), for a caller that keeps it.
    public func counter(_ name: String, help: String, labels: [(String, String)] = []) -> CounterSeries {
        let key = Key(name: name, labels: labels.map(\.1))
        return state.withLock { s in
            if let series = s.counters[key] { return series }
            if s.families[name] == nil { s.families[name] = Family(help: help, type: "counter", labelNames: labels.map(\.0)) }
            let series = CounterSeries()
            s.counters[key] = series
            return series
        }
    }

    /// The series of a histogram (made on first use), for a caller that keeps it.
    public func histogram(_ name: String, help: String, labels: [(String, String)] = [], buckets: [Double] = Metrics.latencyBuckets) -> HistogramSeries {
        let key = Key(name: name, labels: labels.map(\.1))
        return state.withLock { s in
            if let series = s.histograms[key] { return series }
            if s.families[name] == nil { s.families[name] = Family(help: help, type: "histogram", labelNames: labels.map(\.0)) }
            let series = HistogramSeries(buckets: buckets)
            s.histograms[key] = series
            return series
        }
    }

    /// Registers (or replaces) a gauge read at scrape time.
    public func register(_ collector: Collector) {
        collectors.withLock { $0[collector.name] = collector }
    }

    public func unregister(collector name: String) {
        _ = collectors.withLock { $0.removeValue(forKey: name) }
    }

    /// A counter's current value (tests, and appctl).
    public func counter(_ name: String, labels: [String] = []) -> UInt64 {
        state.withLock { $0.counters[Key(name: name, labels: labels)] }?.value.load(ordering: .relaxed) ?? 0
    }

    /// A histogram's observation count.
    public func observations(_ name: String, labels: [String] = []) -> UInt64 {
        state.withLock { $0.histograms[Key(name: name, labels: labels)] }?.histogram.withLock { $0.count } ?? 0
    }

    /// One histogram series: its label values, bucket bounds, the observations in each bucket
    /// (not cumulative; the last is above every bound), how many in all and their sum.
    public struct HistogramSample: Sendable {
        public var labels: [String]
        public var bounds: [Double]
        public var counts: [UInt64]
        public var count: UInt64
        public var sum: Double
    }

    /// Every series of the histogram `name` (the console's charts read them).
    public func histogram(_ name: String) -> [HistogramSample] {
        let series = state.withLock { s in s.histograms.filter { $0.key.name == name } }
        return series.map { key, series in
            let histogram = series.histogram.withLock { $0 }
            let inBuckets = histogram.counts.reduce(0, &+)
            return HistogramSample(
                labels: key.labels, bounds: histogram.buckets, counts: histogram.counts + [histogram.count &- inBuckets], count: histogram.count,
                sum: histogram.sum)
        }
    }

    /// Every metric in the Prometheus text format, version 0.0.4.
    public func render() async -> String {
        let snapshot = state.withLock { $0 }
        var out = ""
        for name in snapshot.families.keys.sorted() {
            guard let family = snapshot.families[name] else { continue }
            out += "# HELP \(name) \(Self.escapeHelp(family.help))\n# TYPE \(name) \(family.type)\n"
            if family.type == "counter" {
                for (key, series) in snapshot.counters where key.name == name {
                    out += "\(name)\(Self.labels(family.labelNames, key.labels)) \(series.value.load(ordering: .relaxed))\n"
                }
            } else {
                for (key, series) in snapshot.histograms where key.name == name {
                    let histogram = series.histogram.withLock { $0 }
                    var cumulative: UInt64 = 0
                    for (bound, count) in zip(histogram.buckets, histogram.counts) {
                        cumulative += count
                        out += "\(name)_bucket\(Self.labels(family.labelNames + ["le"], key.labels + [Self.number(bound)])) \(cumulative)\n"
                    }
                    out += "\(name)_bucket\(Self.labels(family.labelNames + ["le"], key.labels + ["+Inf"])) \(histogram.count)\n"
                    out += "\(name)_sum\(Self.labels(family.labelNames, key.labels)) \(Self.number(histogram.sum))\n"
                    out += "\(name)_count\(Self.labels(family.labelNames, key.labels)) \(histogram.count)\n"
                }
            }
        }
        for collector in collectors.withLock({ $0.values.sorted { $0.name < $1.name } }) {
            out += "# HELP \(collector.name) \(Self.escapeHelp(collector.help))\n# TYPE \(collector.name) gauge\n"
            for (labels, value) in await collector.samples() {
                out += "\(collector.name)\(Self.labels(collector.labelNames, labels)) \(Self.number(value))\n"
            }
        }
        return out
    }

    static func labels(_ names: [String], _ values: [String]) -> String {
        guard !names.isEmpty else { return "" }
        return "{" + zip(names, values).map { "\($0)=\"\(escapeLabel($1))\"" }.joined(separator: ",") + "}"
    }

    static func escapeLabel(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }

    static func escapeHelp(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
    }

    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

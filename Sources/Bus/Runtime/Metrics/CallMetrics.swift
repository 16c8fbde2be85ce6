// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization

/// The bus's own metrics: calls by method and outcome, their latency, and gate denials.
public enum CallMetrics {
    /// One finished call. A method no interface serves is counted as `unknown` (a client's
    /// free text never becomes a label).
    package static func record(method: String, outcome: String, transport: String, since started: ContinuousClock.Instant, known: Bool) {
        let seconds = (ContinuousClock.now - started).inSeconds
        let (calls, duration) = series(method: known ? method : "unknown", outcome: outcome, transport: transport)
        calls.add()
        duration.observe(seconds)
    }

    /// One finished call, counted in `series` (looked up already: a dispatcher's route keeps them).
    package static func record(_ series: (Metrics.CounterSeries, Metrics.HistogramSeries), since started: ContinuousClock.Instant) {
        series.0.add()
        series.1.observe((ContinuousClock.now - started).inSeconds)
    }

    /// The series a call is counted in: one lookup here per call, instead of one per metric
    /// in the registry (whose keys are built from label arrays).
    package static func series(method: String, outcome: String, transport: String) -> (Metrics.CounterSeries, Metrics.HistogramSeries) {
        let key = SeriesKey(method: method, outcome: outcome, transport: transport)
        if let known = cache.withLock({ $0[key] }) { return known }
        let made = (
            Metrics.shared.counter(
                "appd_calls_total",
                help: "Calls by method, outcome (ok, cancelled, disconnected, or the error's name if its interface declares it, else undeclared) and transport.",
                labels: [("method", method), ("outcome", outcome), ("transport", transport)]),
            Metrics.shared.histogram(
                "appd_call_duration_seconds", help: "Time from a call's arrival to its last reply, by method and transport.",
                labels: [("method", method), ("transport", transport)])
        )
        cache.withLock { $0[key] = made }
        return made
    }

    private struct SeriesKey: Hashable {
        let method: String
        let outcome: String
        let transport: String
    }

    /// Bounded as the registry's series are: label values are appd's own vocabulary.
    private static let cache = Mutex<[SeriesKey: (Metrics.CounterSeries, Metrics.HistogramSeries)]>([:])

    /// A gate refused a call.
    package static func denied(gate: String, error: any Error) {
        let name = (error as? any WireError)?.wireName ?? "other"
        Metrics.shared.increment("appd_gate_denials_total", help: "Calls a gate refused, by gate and error.", labels: [("gate", gate), ("error", name)])
    }
}

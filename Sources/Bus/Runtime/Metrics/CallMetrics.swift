import BusCore
/// The bus's own metrics: calls by method and outcome, their latency, and gate denials.
public enum CallMetrics {
    /// One finished call. A method no interface serves is counted as `unknown` (a client's
    /// free text never becomes a label).
    package static func record(method: String, outcome: String, transport: String, since started: ContinuousClock.Instant, known: Bool) {
        let method = known ? method : "unknown"
        let seconds = (ContinuousClock.now - started).inSeconds
        Metrics.shared.increment(
            "appd_calls_total", help: "Calls by method, outcome (ok, cancelled, disconnected, or the error's name if its interface declares it, else undeclared) and transport.",
            labels: [("method", method), ("outcome", outcome), ("transport", transport)])
        Metrics.shared.observe(
            "appd_call_duration_seconds", help: "Time from a call's arrival to its last reply, by method and transport.",
            labels: [("method", method), ("transport", transport)], value: seconds)
    }

    /// A gate refused a call.
    package static func denied(gate: String, error: any Error) {
        let name = (error as? any WireError)?.wireName ?? "other"
        Metrics.shared.increment("appd_gate_denials_total", help: "Calls a gate refused, by gate and error.", labels: [("gate", gate), ("error", name)])
    }
}

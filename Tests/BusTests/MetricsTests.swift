// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink

@Suite struct MetricsTests {
    /// Counters and histograms add up per series, each series apart, and render as Prometheus
    /// text with cumulative buckets.
    @Test func seriesAddUpApartAndRenderCumulatively() async {
        let metrics = Metrics()
        metrics.increment("t_total", help: "h", labels: [("k", "a")])
        metrics.increment("t_total", help: "h", labels: [("k", "a")], by: 2)
        metrics.increment("t_total", help: "h", labels: [("k", "b")])
        #expect(metrics.counter("t_total", labels: ["a"]) == 3)
        #expect(metrics.counter("t_total", labels: ["b"]) == 1)
        for value in [0.0004, 0.002, 0.002, 20.0] {
            metrics.observe("t_seconds", help: "h", labels: [("k", "a")], value: value)
        }
        #expect(metrics.observations("t_seconds", labels: ["a"]) == 4)
        #expect(metrics.observations("t_seconds", labels: ["b"]) == 0)
        let text = await metrics.render()
        #expect(text.contains("t_total{k=\"a\"} 3\n"))
        #expect(text.contains("t_total{k=\"b\"} 1\n"))
        #expect(text.contains("t_seconds_bucket{k=\"a\",le=\"0.0005\"} 1\n"))
        #expect(text.contains("t_seconds_bucket{k=\"a\",le=\"0.0025\"} 3\n"))
        #expect(text.contains("t_seconds_bucket{k=\"a\",le=\"10\"} 3\n"))
        #expect(text.contains("t_seconds_bucket{k=\"a\",le=\"+Inf\"} 4\n"))
        #expect(text.contains("t_seconds_count{k=\"a\"} 4\n"))
    }
}

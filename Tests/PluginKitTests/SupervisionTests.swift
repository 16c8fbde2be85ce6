// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import PluginKit

/// The one supervision built-in and external plugins share: backoff, giving up, what is shown.
@Suite struct SupervisionTests {
    let policy = RestartPolicy(initialBackoff: .milliseconds(100), maxBackoff: .milliseconds(350), healthyAfter: .seconds(10), maxQuickFailures: 3)

    @Test func quickFailuresBackOffExponentiallyUpToTheCapThenGiveUp() {
        var s = Supervision(plugin: "notes", policy: policy)
        s.starting()
        s.running()
        #expect(s.failed("crashed", ranFor: .seconds(1)) == .restart(after: .milliseconds(100)))
        #expect(s.state == .degraded && s.lastError == "crashed")
        s.restarting(manual: false)
        #expect(s.failed("crashed", ranFor: .seconds(1)) == .restart(after: .milliseconds(200)))
        s.restarting(manual: false)
        #expect(s.failed("crashed", ranFor: nil) == .restart(after: .milliseconds(350)))
        s.restarting(manual: false)
        #expect(s.failed("crashed", ranFor: .milliseconds(5)) == .giveUp)
        #expect(s.state == .failed && s.restarts == 3)
        #expect(s.lastError == "crashed; gave up after 3 restarts (appctl plugins restart notes tries again)")
    }

    @Test func aHealthyRunStartsTheCountOverAndAManualRestartForgetsTheFailures() {
        var s = Supervision(plugin: "notes", policy: policy)
        _ = s.failed("a", ranFor: .seconds(1))
        _ = s.failed("b", ranFor: .seconds(1))
        #expect(s.failed("c", ranFor: .seconds(60)) == .restart(after: .milliseconds(100)), "a long run was healthy")
        _ = s.failed("d", ranFor: .seconds(1))
        s.restarting(manual: true)
        #expect(s.lastError == nil)
        #expect(s.failed("e", ranFor: .seconds(1)) == .restart(after: .milliseconds(100)))
    }

    @Test func degradedShowsAsRunningOnlyAfterARestartThatStayedUp() {
        var s = Supervision(plugin: "notes", policy: policy)
        s.running()
        let failedAt = ContinuousClock.now
        _ = s.failed("x", ranFor: .seconds(1), at: failedAt)
        #expect(s.reportedState(at: failedAt + .seconds(60)) == .degraded, "still waiting out its backoff")
        s.restarting(manual: false)
        #expect(s.reportedState(at: failedAt + .seconds(5)) == .degraded)
        #expect(s.reportedState(at: failedAt + .seconds(60)) == .running)
    }

    @Test func withoutALimitItIsNeverGivenUp() {
        var s = Supervision(plugin: "notes", policy: RestartPolicy(initialBackoff: .milliseconds(1), maxBackoff: .milliseconds(2), healthyAfter: .seconds(1)))
        for _ in 0..<100 { #expect(s.failed("x", ranFor: nil) != .giveUp) }
    }
}

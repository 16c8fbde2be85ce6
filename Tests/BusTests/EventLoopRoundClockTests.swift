// SPDX-License-Identifier: Apache-2.0
import Runtime
import Synchronization
import Testing
import TestSupport

/// `EventLoop.now`: on the loop's thread the time its round began (no clock read per stamp),
/// elsewhere the clock; never ahead of the clock, and moving on with the rounds.
@Suite struct EventLoopRoundClockTests {
    @Test func onTheLoopItIsTheRoundsTimeElsewhereTheClock() async throws {
        let loop = try EventLoop(name: "test-round-clock")
        loop.start()
        let readings: [ContinuousClock.Instant] = await withCheckedContinuation { c in
            loop.execute {
                let before = ContinuousClock.now
                let first = loop.now
                // Work within one round does not move it on.
                let spinning = ContinuousClock.now
                while ContinuousClock.now - spinning < .milliseconds(5) {}
                let second = loop.now
                c.resume(returning: [before, first, second, ContinuousClock.now])
            }
        }
        #expect(readings[1] <= readings[0], "the round began before the job ran")
        #expect(readings[1] == readings[2], "one round, one time")
        #expect(readings[3] - readings[2] >= .milliseconds(5))
        // Off the loop: the clock itself.
        let outside = loop.now
        #expect(outside >= readings[3])
        // A later round has a later time.
        let later: ContinuousClock.Instant = await withCheckedContinuation { c in loop.execute { c.resume(returning: loop.now) } }
        #expect(later >= readings[2] + .milliseconds(5), "a later round's time is past the earlier round's work")
        await loop.stop { true }
    }
}

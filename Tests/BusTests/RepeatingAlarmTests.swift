// SPDX-License-Identifier: Apache-2.0
import Bus
import Runtime
import Synchronization
import Testing
import TestSupport

@Suite struct RepeatingAlarmTests {
    /// Fires until cancelled, then never again (a firing under way may finish).
    private static func firesUntilCancelled(
        _ start: (@escaping @Sendable () -> Void) async -> RepeatingAlarm, onLoop: (@Sendable () -> Bool)?
    ) async throws {
        let fired = Atomic<Int>(0)
        let offLoop = Atomic<Int>(0)
        let alarm = await start {
            fired.add(1, ordering: .relaxed)
            if let onLoop, !onLoop() { offLoop.add(1, ordering: .relaxed) }
        }
        #expect(alarm.onTimerList == (onLoop != nil), "a loop's timer list when set on a loop, else a task")
        #expect(await eventually { fired.load(ordering: .relaxed) >= 3 }, "it fires again and again")
        alarm.cancel()
        let atCancel = fired.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(400))
        #expect(fired.load(ordering: .relaxed) <= atCancel + 1, "nothing fires after cancel")
        #expect(offLoop.load(ordering: .relaxed) == 0, "every firing ran on the loop's thread")
    }

    @Test func onAServersLoopItIsAnEntryInTheLoopsTimerListReArmedEachTime() async throws {
        let loop = try EventLoop(name: "test-repeating")
        loop.start()
        let made = Mutex<RepeatingAlarm?>(nil)
        try await Self.firesUntilCancelled(
            { fire in
                // A task on the loop, as a server's request task: the alarm goes to its timer list.
                await loop.task { made.withLock { $0 = RepeatingAlarm(every: .milliseconds(50), fire) } }.value
                return made.withLock { $0! }
            }, onLoop: { loop.inLoopThread })
        await loop.stop { true }
    }

    @Test func elsewhereItIsATaskThatSleepsBetweenFirings() async throws {
        try await Self.firesUntilCancelled({ fire in RepeatingAlarm(every: .milliseconds(30), fire) }, onLoop: nil)
    }
}

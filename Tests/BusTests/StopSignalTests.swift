// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization
import Testing

@Suite struct StopSignalTests {
    @Test func stopRunsEveryActionOnceAndLaterOnesAtOnce() {
        let signal = StopSignal()
        let runs = Atomic<Int>(0)
        let first = signal.onStop { runs.add(1, ordering: .relaxed) }
        signal.onStop { runs.add(10, ordering: .relaxed) }
        #expect(first != nil && !signal.isStopped && runs.load(ordering: .relaxed) == 0)
        signal.stop()
        signal.stop()
        #expect(signal.isStopped && runs.load(ordering: .relaxed) == 11)
        // Registered after the stop: runs now, and there is nothing to remove.
        let late = signal.onStop { runs.add(100, ordering: .relaxed) }
        #expect(late == nil && runs.load(ordering: .relaxed) == 111)
    }

    @Test func aRemovedActionDoesNotRun() {
        let signal = StopSignal()
        let runs = Atomic<Int>(0)
        let token = signal.onStop { runs.add(1, ordering: .relaxed) }
        signal.remove(token)
        signal.remove(nil)
        signal.stop()
        #expect(signal.isStopped && runs.load(ordering: .relaxed) == 0)
    }

    @Test func concurrentStopsRunEachActionOnce() async {
        let signal = StopSignal()
        let runs = Atomic<Int>(0)
        for _ in 0..<50 { signal.onStop { runs.add(1, ordering: .relaxed) } }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { signal.stop() } }
        }
        #expect(runs.load(ordering: .relaxed) == 50)
    }
}

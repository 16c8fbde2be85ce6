// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// A wall clock the test moves by hand; plugins built by a harness read it.
public final class TestClock: Sendable {
    private let value: Mutex<WallTime>
    public init(_ start: WallTime = WallTime(nanosecondsSinceEpoch: 1_800_000_000_000_000_000)) { value = Mutex(start) }
    public var now: WallTime { value.withLock { $0 } }
    public var seconds: Int64 { now.nanosecondsSinceEpoch / 1_000_000_000 }
    public func advance(seconds: Int64) { value.withLock { $0.nanosecondsSinceEpoch += seconds * 1_000_000_000 } }
}

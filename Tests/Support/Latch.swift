// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A door a test opens once: `wait` returns when it is open, and ignores cancellation (so a
/// handler can stand for work that does not stop when asked). What a test waits on instead of
/// a time: the work ends exactly when the test has checked what it must see before.
public final class Latch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    public func open() {
        let waiters = state.withLock { s in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let open = state.withLock { s in
                if !s.open { s.waiters.append(c) }
                return s.open
            }
            if open { c.resume() }
        }
    }
}

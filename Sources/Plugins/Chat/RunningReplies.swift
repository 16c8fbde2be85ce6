// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The replies streaming right now, so `Cancel` from another connection can stop one.
final class RunningReplies: Sendable {
    private struct Entry {
        let owner: String
        let cancel: @Sendable () -> Void
    }
    private let entries = Mutex<[String: Entry]>([:])

    func add(_ id: String, owner: String, cancel: @escaping @Sendable () -> Void) {
        entries.withLock { $0[id] = Entry(owner: owner, cancel: cancel) }
    }

    func remove(_ id: String) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    /// Cancels the owner's running reply; false when there is none (finished, or not theirs).
    func cancel(_ id: String, owner: String) -> Bool {
        guard let entry = entries.withLock({ $0[id] }), entry.owner == owner else { return false }
        entry.cancel()
        return true
    }
}

// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// What other threads hand the loop to run — its task jobs (`EventLoopExecutor`), its `execute`
/// closures, the channels to flush. Any thread appends; the loop takes it all at once, swapped
/// with an array it keeps, so both keep their capacity.
final class LoopQueue<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    /// Whether `items` may hold something: checked without the lock on every round.
    private let pending = Atomic<Bool>(false)

    /// Appends `item`; true when the queue was empty (the loop may need waking).
    func append(_ item: Element) -> Bool {
        let first = items.withLock { queue in
            queue.append(item)
            return queue.count == 1
        }
        pending.store(true, ordering: .releasing)
        return first
    }

    var mayHoldSome: Bool { pending.load(ordering: .acquiring) }

    /// Whether anything is queued now (under the lock: exact, where `mayHoldSome` may lag).
    var isEmpty: Bool { items.withLock { $0.isEmpty } }

    /// Moves everything queued into `buffer` (empty on entry); false when there was nothing.
    func take(into buffer: inout [Element]) -> Bool {
        guard mayHoldSome else { return false }
        items.withLock { queue in
            swap(&queue, &buffer)
            pending.store(false, ordering: .releasing)
        }
        return !buffer.isEmpty
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Synchronization

/// The token pairs recent refreshes handed out, by the digest of the refresh token they
/// replaced, for the reuse interval only: a second `Refresh` with the same token (two appctl
/// runs at once) gets the same pair instead of tripping reuse detection. In memory and bounded;
/// after a restart a late duplicate is simply refused (`Unauthenticated`), never a revocation.
final class RecentRotations: Sendable {
    private struct Entry {
        let session: Session
        let until: Int64
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = capacity }

    func remember(_ digest: String, _ session: Session, until: Int64, now: Int64) {
        entries.withLock { table in
            if table.count >= capacity {
                // Expired entries go first; if every one is still live, the oldest pairs are
                // simply forgotten (a late duplicate is then refused, never a revocation).
                table = table.filter { $0.value.until > now }
                if table.count >= capacity { table.removeAll() }
            }
            table[digest] = Entry(session: session, until: until)
        }
    }

    /// The pair `digest`'s token was rotated into, while the interval lasts.
    func session(for digest: String, at now: Int64) -> Session? {
        entries.withLock { table in
            guard let entry = table[digest] else { return nil }
            guard entry.until > now else {
                table[digest] = nil
                return nil
            }
            return entry.session
        }
    }
}

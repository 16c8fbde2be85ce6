import Bus

/// A caller's closure, wrapped for a database thread: `run` executes it and says whether it
/// succeeded (with the completion to call after the commit); `fail` resumes the caller with an
/// error instead.
struct DatabaseWork: Sendable {
    let run: @Sendable (any Transaction) -> (succeeded: Bool, complete: @Sendable () -> Void)
    let fail: @Sendable (any Error) -> Void
    /// The deadline race the caller works for: claimed before the write is kept, so a caller
    /// already told "too late" never has its write committed (see `withDeadline`).
    var deadline: (any DeadlineClaim)?

    init<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T, _ continuation: CheckedContinuation<T, any Error>) {
        run = { transaction in
            do {
                let value = try body(transaction)
                return (true, { continuation.resume(returning: value) })
            } catch {
                return (false, { continuation.resume(throwing: error) })
            }
        }
        fail = { error in continuation.resume(throwing: error) }
    }

    /// What a caller whose deadline passed before the commit is told (its write rolled back).
    static let late = StorageError(kind: .other, message: "the caller's deadline passed before the write was committed; it was rolled back")

    static let closed = StorageError(kind: .closed, message: "the database is closed")
}

/// Queued for a writer thread: a write, or the close that finishes the queue.
enum DatabaseJob: Sendable {
    case write(DatabaseWork)
    case close(@Sendable () -> Void)
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Runtime

/// A caller's closure, wrapped for a database thread: `run` executes it and says whether it
/// succeeded (with the completion to call after the commit); `fail` resumes the caller with an
/// error instead.
struct DatabaseWork: Sendable {
    let run: @Sendable (any Transaction) -> (succeeded: Bool, complete: @Sendable () -> Void)
    let fail: @Sendable (any Error) -> Void
    /// The deadline race the caller works for: claimed before the write is kept, so a caller
    /// already told "too late" never has its write committed (see `withDeadline`).
    var deadline: (any DeadlineClaim)?
    /// The keyed call the caller works for: its row is kept in the same transaction.
    var idempotency: IdempotencyRecord?

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

/// A write transaction that collects the events appended in it (the outbox).
protocol OutboxTransaction: Transaction, AnyObject {
    /// Set by the writer before the closure runs (see `Transaction.idempotency`).
    var idempotency: IdempotencyRecord? { get set }
    /// Events logged in the transaction, with their sequence numbers.
    var events: [BusEvent] { get }
    /// Events to log at the commit, and erasures, in the order the closure made them.
    var deferred: [DeferredEntry] { get }
}

extension OutboxTransaction {
    var deferred: [DeferredEntry] { [] }
}

/// An event to log at the commit.
struct DeferredEntry {
    var event: BusEvent
    /// Its `EventLog.insert` parameters (checked and encoded when it was appended).
    var parameters: [SQLValue]
    /// Its index in the transaction (its position is `appd_event_position()` plus it).
    var index: Int64
    /// Appended by the write that erased its owner, after the erasure: it keeps its payload
    /// (see `Transaction.redactEvents`).
    var keptThroughErasure: Bool
}

/// What running a batch's writes inside its transaction left to do after the commit.
struct BatchOutcome {
    /// Each caller's answer, in order: to call after the commit (or to fail if it fails).
    var completions: [@Sendable () -> Void] = []
    /// The events of the writes kept, in log order.
    var events: [BusEvent] = []
    /// What the writes kept deferred to the commit, in order.
    var deferred: [DeferredEntry] = []
    /// Whether any write is kept (else there is nothing to commit).
    var kept = false
    /// Whether a write threw or was too late (without savepoints, the batch must then be run again).
    var anyUndone = false
    /// The keyed calls' rows (`IdempotencyLog.row`) the engine inserts with its commit, when it
    /// ran the batch with `deferKeys`.
    var keys: [[SQLValue]] = []
}

extension DatabaseWork {
    /// Runs the writes of a batch inside an open transaction, each in its own savepoint when
    /// `savepoints`: one that throws, or whose caller's deadline passed before the commit, is
    /// undone alone. Throws when the savepoint machinery itself fails (then nothing of the batch
    /// may be committed). Both engines' writers use it.
    /// `deferKeys`: a keyed call's row is not inserted here but left in `keys`, for the engine
    /// to insert with its commit (one round trip less per keyed write); a key taken meanwhile
    /// then fails the commit, and the engine runs the batch again without deferring.
    static func run<T: OutboxTransaction>(
        _ writes: [DatabaseWork], savepoints: Bool, deferKeys: Bool = false, transaction: () -> T, control: (String) throws -> Void
    ) throws -> BatchOutcome {
        var outcome = BatchOutcome()
        for work in writes {
            let transaction = transaction()
            transaction.idempotency = work.idempotency
            // A reply staged by an earlier run of this write (its batch is being run again) is
            // not this run's.
            work.idempotency?.unstage()
            if savepoints { try control("SAVEPOINT w") }
            var (succeeded, complete) = work.run(transaction)
            var key: [SQLValue]?
            if succeeded, let record = work.idempotency, deferKeys, !record.outcome.committed {
                key = IdempotencyLog.row(record)
                let withReply = record.staged != nil
                let answer = complete
                complete = {
                    record.committed(withReply: withReply); answer()
                }
            } else if succeeded, let record = work.idempotency {
                // The call's key goes into the same transaction as its effect.
                do {
                    let withReply = try IdempotencyLog.keep(record, in: transaction)
                    let answer = complete
                    complete = {
                        record.committed(withReply: withReply); answer()
                    }
                } catch {
                    succeeded = false
                    let fail = work.fail
                    complete = { fail(error) }
                }
            }
            if succeeded, work.deadline?.claim() ?? true {
                if savepoints { try control("RELEASE w") }
                outcome.events += transaction.events
                outcome.deferred += transaction.deferred
                if let key { outcome.keys.append(key) }
                outcome.completions.append(complete)
                outcome.kept = true
            } else {
                // The closure threw, or its caller's deadline passed before the commit: undo
                // exactly its changes; the others stay.
                if savepoints {
                    try control("ROLLBACK TO w")
                    try control("RELEASE w")
                }
                let fail = work.fail
                let late: @Sendable () -> Void = { fail(DatabaseWork.late) }
                outcome.completions.append(succeeded ? late : complete)
                outcome.anyUndone = true
            }
        }
        return outcome
    }

    /// Runs a batch the way both engines do: first without savepoints (a savepoint costs two
    /// statements, or round trips, per write, and SQLite copies every page a write changes into
    /// its statement journal). If every write succeeds, that is the batch. If one threw (or its
    /// caller's deadline passed), its changes cannot be undone alone: `restart` rolls the
    /// transaction back and begins it again, and the batch runs again with a savepoint per write.
    /// (Closures are run again, which they allow: they only touch the transaction; a caller whose
    /// deadline claim succeeded stays claimed; a reply staged by the first run is dropped.)
    static func runBatch<T: OutboxTransaction>(
        _ writes: [DatabaseWork], deferKeys: Bool = false, transaction: () -> T, control: (String) throws -> Void, restart: () throws -> Void
    ) throws -> BatchOutcome {
        let first = try run(writes, savepoints: false, deferKeys: deferKeys, transaction: transaction, control: control)
        guard first.anyUndone && writes.count > 1 else { return first }
        try restart()
        return try run(writes, savepoints: true, transaction: transaction, control: control)
    }

    /// A writer's drain job: the jobs in batches of at most `maxBatch`, each to `commit`; a
    /// close commits what came before it, then runs `close` and answers its caller.
    static func drain(_ jobs: [DatabaseJob], maxBatch: Int, commit commitBatch: ([DatabaseWork]) -> Void, close: () -> Void) {
        func commit(_ batch: [DatabaseWork]) {
            guard !batch.isEmpty else { return commitBatch(batch) }
            let started = ContinuousClock.now
            commitBatch(batch)
            let elapsed = ContinuousClock.now - started
            Metrics.shared.observe(
                "appd_commit_batch_size", help: "Writes committed together in one group commit.", value: Double(batch.count), buckets: Metrics.batchBuckets)
            Metrics.shared.observe(
                "appd_commit_duration_seconds", help: "Time to run and commit one group-commit batch.",
                value: elapsed.inSeconds)
        }
        var batch: [DatabaseWork] = []
        for job in jobs {
            switch job {
            case .write(let work):
                batch.append(work)
                if batch.count == maxBatch {
                    commit(batch)
                    batch.removeAll()
                }
            case .close(let done):
                commit(batch)
                batch.removeAll()
                close()
                done()
            }
        }
        commit(batch)
    }

    /// Queues a write for `queue`'s writer (its deadline claimed before the commit); throws
    /// `closed` when the database is closed.
    static func write<T: Sendable>(
        _ body: @escaping @Sendable (any Transaction) throws -> T, on queue: DrainQueue<DatabaseJob>, drain: @escaping @Sendable ([DatabaseJob]) -> Void
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            var work = DatabaseWork(body, continuation)
            work.deadline = Deadline.current
            work.idempotency = IdempotencyRecord.current
            if !queue.enqueue(.write(work), drain: drain) { continuation.resume(throwing: DatabaseWork.closed) }
        }
    }
}

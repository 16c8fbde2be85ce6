import Bus
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// SQLite behind the `Database` protocol: WAL, `synchronous=FULL`, foreign keys on, a busy
/// timeout. One pool thread owns the write connection; another a read-only connection, so
/// reads (the session gate's, say) never interrupt a batch of writes (WAL lets them run side
/// by side, each read seeing the last commit).
///
/// **Group commit**: the thread takes every write waiting when it is free and runs them in
/// one transaction, each in its own savepoint (one failing write rolls back only itself). One
/// fsync then makes all of them durable, and only then is each caller resumed: a reply that
/// says "done" means committed. Events appended in a write are published to the bus after the
/// commit, in log order.
public final class SQLiteDatabase: Database {
    public struct Options: Sendable {
        public var busyTimeoutMilliseconds: Int32 = 5000
        /// Writes folded into one commit at most.
        public var maxBatch: Int = 256
        public init() {}
    }

    /// A caller's closure, wrapped: `run` executes it and says whether it succeeded (with the
    /// completion to call after the commit); `fail` resumes the caller with an error instead.
    private struct Work: Sendable {
        let run: @Sendable (SQLiteTransaction) -> (succeeded: Bool, complete: @Sendable () -> Void)
        let fail: @Sendable (any Error) -> Void
        /// The deadline race the caller works for: claimed before the write is kept, so a
        /// caller already told "too late" never has its write committed (see `withDeadline`).
        var deadline: (any DeadlineClaim)?
    }

    /// Work queued for the writer thread.
    private enum Job {
        case write(Work)
        case close(@Sendable () -> Void)
    }

    public let path: String
    private let options: Options
    /// Where committed events go; set at start, or later when the bus is built after the
    /// database (the bus's gates read the database).
    private let bus: Mutex<EventBus?>
    /// Writes waiting for the writer, and whether a drain job is queued or running on it.
    private let queue = Mutex<(jobs: [Job], draining: Bool, closed: Bool)>(([], false, false))
    private let reads = Mutex<(jobs: [Work], draining: Bool, closed: Bool)>(([], false, false))
    /// One thread each: the write connection's and the read connection's (SQLite connections
    /// are used by one thread at a time; one drain job at a time runs on each).
    private let writer: BlockingPool
    private let reader: BlockingPool
    private let writeConnection: ConnectionBox
    private let readConnection: ConnectionBox
    private let logger: Logger

    /// Opens (or creates) the database and starts its thread.
    public init(path: String, bus: EventBus?, options: Options = Options(), logger: Logger = Logger(label: "appd.storage")) throws {
        self.path = path
        self.options = options
        self.bus = Mutex(bus)
        self.logger = logger
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        try connection.executeScript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
        try connection.executeScript(EventLog.schema)
        try EventLog.upgrade(connection)
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        try reader.executeScript("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA query_only=1;")
        self.writeConnection = ConnectionBox(connection)
        self.readConnection = ConnectionBox(reader)
        // The queue limits are the drain jobs (at most one waits); callers queue in `queue`/`reads`.
        self.writer = BlockingPool(name: "appd-db-write", threads: 1, queueLimit: 4)
        self.reader = BlockingPool(name: "appd-db-read", threads: 1, queueLimit: 4)
    }

    /// Publishes committed events on `bus` from now on.
    public func attach(bus: EventBus) {
        self.bus.withLock { $0 = bus }
    }

    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            var work = Self.work(body, continuation)
            work.deadline = Deadline.current
            enqueue(.write(work)) {
                continuation.resume(throwing: StorageError(kind: .closed, message: "the database is closed"))
            }
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = reads.withLock { r -> Bool? in
                guard !r.closed else { return nil }
                r.jobs.append(Self.work(body, continuation))
                defer { r.draining = true }
                return !r.draining
            }
            guard let accepted else {
                return continuation.resume(throwing: StorageError(kind: .closed, message: "the database is closed"))
            }
            if accepted { schedule(on: reader) { [self] in drainReads() } }
        }
    }

    private static func work<T: Sendable>(
        _ body: @escaping @Sendable (any Transaction) throws -> T, _ continuation: CheckedContinuation<T, any Error>
    ) -> Work {
        Work(
            run: { transaction in
                do {
                    let value = try body(transaction)
                    return (true, { continuation.resume(returning: value) })
                } catch {
                    return (false, { continuation.resume(throwing: error) })
                }
            },
            fail: { error in continuation.resume(throwing: error) })
    }

    /// Finishes queued reads and writes, then closes both connections and ends their threads.
    public func close() async {
        let first = reads.withLock { r -> Bool in
            defer { r.closed = true }
            return !r.closed
        }
        guard first else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            enqueue(.close { continuation.resume() }) { continuation.resume() }
        }
        // The writer has committed and closed; reads queued before `close` still run.
        try? await reader.run { [self] in
            drainReads()
            readConnection.close()
        }
        // Their queues are empty: the threads exit on their own.
        reader.close()
        writer.close()
    }

    private func enqueue(_ job: Job, ifClosed: () -> Void) {
        let accepted = queue.withLock { q -> Bool? in
            guard !q.closed else { return nil }
            q.jobs.append(job)
            if case .close = job { q.closed = true }
            defer { q.draining = true }
            return !q.draining
        }
        guard let accepted else { return ifClosed() }
        if accepted { schedule(on: writer) { [self] in drainWrites() } }
    }

    /// Queues a drain job. The pools' queues hold at most this one job each, so they never
    /// refuse it; if one did, the failure is loud rather than a caller left waiting forever.
    private func schedule(on pool: BlockingPool, _ drain: @escaping @Sendable () -> Void) {
        do throws(PoolRefusal) {
            try pool.submit(drain)
        } catch {
            preconditionFailure("the \(pool.name) pool refused the database's drain job: \(error)")
        }
    }

    // MARK: The database threads

    /// The writer's drain job: takes every waiting write and commits them in batches, until
    /// none is left.
    private func drainWrites() {
        while true {
            let jobs = queue.withLock { q -> [Job] in
                if q.jobs.isEmpty { q.draining = false }
                defer { q.jobs.removeAll(keepingCapacity: true) }
                return q.jobs
            }
            if jobs.isEmpty { return }
            guard let open = writeConnection.connection else {
                for case .write(let work) in jobs { work.fail(StorageError(kind: .closed, message: "the database is closed")) }
                continue
            }
            var writes: [Work] = []
            for job in jobs {
                switch job {
                case .write(let body):
                    writes.append(body)
                    if writes.count == options.maxBatch {
                        commit(writes, on: open)
                        writes.removeAll()
                    }
                case .close(let done):
                    commit(writes, on: open)
                    writes.removeAll()
                    writeConnection.close()
                    done()
                }
            }
            commit(writes, on: open)
        }
    }

    /// The reader's drain job: each read in its own transaction, a consistent snapshot of the
    /// last commit.
    private func drainReads() {
        while true {
            let jobs = reads.withLock { r -> [Work] in
                if r.jobs.isEmpty { r.draining = false }
                defer { r.jobs.removeAll(keepingCapacity: true) }
                return r.jobs
            }
            if jobs.isEmpty { return }
            guard let connection = readConnection.connection else {
                for work in jobs { work.fail(StorageError(kind: .closed, message: "the database is closed")) }
                continue
            }
            for work in jobs { read(work, on: connection) }
        }
    }

    /// Runs a read in its own (deferred) transaction, so it sees one consistent snapshot.
    private func read(_ work: Work, on connection: SQLiteConnection) {
        do {
            try connection.control("BEGIN")
        } catch {
            return work.fail(error)
        }
        let (_, complete) = work.run(SQLiteTransaction(connection: connection, logEvents: false))
        try? connection.control("COMMIT")
        complete()
    }

    /// Runs a batch of writes in one transaction, one savepoint each; resumes the callers after
    /// the commit (or fails them all with the commit's error), then publishes the committed
    /// events in log order.
    private func commit(_ writes: [Work], on connection: SQLiteConnection) {
        guard !writes.isEmpty else { return }
        do {
            try connection.control("BEGIN IMMEDIATE")
        } catch {
            logger.error("cannot begin a transaction", metadata: ["error": "\(error)"])
            for work in writes { work.fail(error) }
            return
        }
        var completions: [@Sendable () -> Void] = []
        var events: [BusEvent] = []
        for work in writes {
            let transaction = SQLiteTransaction(connection: connection, logEvents: true)
            do {
                try connection.control("SAVEPOINT w")
                let (succeeded, complete) = work.run(transaction)
                if succeeded, work.deadline?.claim() ?? true {
                    try connection.control("RELEASE w")
                    events += transaction.events
                    completions.append(complete)
                } else {
                    // The closure threw, or its caller's deadline passed before the commit:
                    // undo exactly its changes; the others stay.
                    try connection.executeScript("ROLLBACK TO w; RELEASE w")
                    let fail = work.fail
                    let late: @Sendable () -> Void = {
                        fail(StorageError(kind: .other, message: "the caller's deadline passed before the write was committed; it was rolled back"))
                    }
                    completions.append(succeeded ? late : complete)
                }
            } catch {
                // The savepoint machinery itself failed: nothing in the batch is applied.
                try? connection.executeScript("ROLLBACK")
                logger.error("transaction failed; no write in the batch was applied", metadata: ["error": "\(error)"])
                for pending in writes { pending.fail(error) }
                return
            }
        }
        do {
            try connection.control("COMMIT")
        } catch {
            try? connection.executeScript("ROLLBACK")
            logger.error("commit failed; no write in the batch was applied", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
            for work in writes { work.fail(error) }
            return
        }
        for complete in completions { complete() }
        if !events.isEmpty, let bus = bus.withLock({ $0 }) { for event in events { bus.publish(event) } }
    }
}

/// A connection used only by its pool's single thread, one drain job at a time.
private final class ConnectionBox: @unchecked Sendable {  // safe: only the owning pool's one drain job touches it
    private(set) var connection: SQLiteConnection?
    init(_ connection: SQLiteConnection) { self.connection = connection }
    /// Closes the connection (SQLite closes it as the last reference goes).
    func close() { connection = nil }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Runtime

/// SQLite behind the `Database` protocol: WAL, `synchronous=FULL`, foreign keys on, a busy
/// timeout. One pool thread owns the write connection; another a read-only connection, so
/// reads (the session gate's, say) never interrupt a batch of writes (WAL lets them run side
/// by side, each read seeing the last commit).
///
/// **Group commit**: the thread takes every write waiting when it is free and runs them in
/// one transaction (one failing write rolls back only itself: see `commit`). One
/// fsync then makes all of them durable, and only then is each caller resumed: a reply that
/// says "done" means committed. Events appended in a write are published to the bus after the
/// commit, in log order.
public final class SQLiteDatabase: Database {
    public struct Options: Sendable {
        public var busyTimeoutMilliseconds: Int32 = 5000
        /// Writes folded into one commit at most.
        public var maxBatch: Int = 256
        /// The bytes of write-ahead log kept when it starts over after a checkpoint (SQLite's
        /// `journal_size_limit`): about one round of the log at the automatic checkpoint (1,000
        /// pages of 4 KB and their frame headers), so each round writes over the last one's
        /// frames in blocks the file already has. Cutting it back to nothing (0, as before)
        /// made every round grow the file again, and each commit's `fdatasync` then flushed
        /// the filesystem's block allocation with it: a durable `Todos.Add` took ~12% more
        /// writer time and its throughput was ~25% lower (`contrib/bench/report`). An erased
        /// account's text does not wait for the log to be written over: `reclaimErased`
        /// truncates it.
        public var walBytesKept: Int = 4 << 20
        public init() {}
    }

    public let path: String
    private let options: Options
    /// Where committed events go (nil: nowhere; they are in the log all the same).
    private let outbox: EventOutbox?
    /// One thread each: the write connection's and the read connection's (SQLite connections
    /// are used by one thread at a time; one drain job at a time runs on each).
    private let writes: DrainQueue<DatabaseJob>
    private let reads: DrainQueue<DatabaseWork>
    private let writeConnection: ConnectionBox
    private let readConnection: ConnectionBox
    private let logger: Logger

    /// Opens (or creates) the database and starts its thread.
    public init(path: String, outbox: EventOutbox?, options: Options = Options(), logger: Logger = Logger(label: "appd.storage")) throws {
        self.path = path
        self.options = options
        self.outbox = outbox
        self.logger = logger
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        try connection.executeScript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
                // Deleted content and freed pages are overwritten with zeros; the log file is
                // cut back to about one round whenever it starts over (see `walBytesKept`), and
                // to nothing after an account's erasure (`reclaimErased`).
                + "PRAGMA secure_delete=ON; PRAGMA journal_size_limit=\(max(0, options.walBytesKept));")
        try connection.executeScript(EventLog.schema + IdempotencyLog.schema + AccountBytes.schema)
        try EventLog.upgrade(connection)
        try AccountBytes.upgrade(connection)
        connection.mayHoldErasedOwners = !(try connection.run("SELECT 1 AS erased FROM appd_erased_owners LIMIT 1", [])).isEmpty
        let reader = try SQLiteConnection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        try reader.executeScript("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA query_only=1;")
        self.writeConnection = ConnectionBox(connection)
        self.readConnection = ConnectionBox(reader)
        // The pools hold at most one drain job each; callers wait in the DrainQueues.
        self.writes = DrainQueue(pool: BlockingPool(name: "appd-db-write", threads: 1, queueLimit: 4))
        self.reads = DrainQueue(pool: BlockingPool(name: "appd-db-read", threads: 1, queueLimit: 4))
    }

    public var dialect: SQLDialect { .sqlite }
    /// One appd owns the file (the control socket is claimed first, so a second appd on the
    /// same data directory stops before opening it).
    public var sharedAcrossInstances: Bool { false }

    /// `VACUUM INTO` on a connection of its own, on a thread of its own: a read transaction, so
    /// the writer and the reader go on (WAL) and the copy is one commit's state, compacted.
    public func backup(into target: String) async throws {
        let (path, timeout) = (self.path, options.busyTimeoutMilliseconds)
        try await Self.backups.run {
            let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: timeout)
            _ = try connection.run("VACUUM INTO ?", [.text(target)])
        }
    }

    /// Copies the write-ahead log into the database (whose pages `secure_delete` zeroed where
    /// rows were deleted) and truncates the log to nothing, so erased text is in neither file.
    /// Waits for readers within the busy timeout.
    public func reclaimErased() async throws {
        let (path, timeout) = (self.path, options.busyTimeoutMilliseconds)
        try await Self.backups.run {
            let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: timeout)
            let result = try connection.run("PRAGMA wal_checkpoint(TRUNCATE)", [])
            if result.first?.integer("busy") == 1 {
                throw StorageError(kind: .busy, message: "the write-ahead log could not be truncated: a reader held it past the busy timeout")
            }
        }
    }

    private static let backups = BlockingPool(name: "appd-db-backup", threads: 1, queueLimit: 8)

    /// One instance: the lease is always this one's.
    public func holdingLease(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await body()
    }

    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await DatabaseWork.write(body, on: writes) { [self] in drainWrites($0) }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            if !reads.enqueue(DatabaseWork(body, continuation), drain: { [self] in drainReads($0) }) {
                continuation.resume(throwing: DatabaseWork.closed)
            }
        }
    }

    /// Finishes queued reads and writes, then closes both connections and ends their threads.
    public func close() async {
        guard reads.close() else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = writes.enqueue(.close { continuation.resume() }, closes: true) { [self] in drainWrites($0) }
            if !queued { continuation.resume() }
        }
        // The writer has committed and closed; reads queued before `close` ran or are running
        // on the reader's one thread: this job runs after them.
        try? await reads.pool.run { [self] in readConnection.close() }
        // Their queues are empty: the threads exit on their own.
        reads.pool.close()
        writes.pool.close()
        outbox?.finish()
    }

    // MARK: The database threads

    /// The writer's drain job: commits the writes it was given in batches of `maxBatch`.
    private func drainWrites(_ jobs: [DatabaseJob]) {
        guard let open = writeConnection.connection else {
            for case .write(let work) in jobs { work.fail(DatabaseWork.closed) }
            return
        }
        DatabaseWork.drain(jobs, maxBatch: options.maxBatch, commit: { commit($0, on: open) }, close: { writeConnection.close() })
    }

    /// The reader's drain job: the reads that waited together share one read transaction, so
    /// each sees one consistent snapshot, taken after every one of them was queued (each sees
    /// every commit made before it was asked for), and a busy reader opens and closes one
    /// snapshot per batch rather than one per read (each costs lock calls on the WAL index).
    /// Each caller is answered as soon as its read has run.
    private func drainReads(_ jobs: [DatabaseWork]) {
        guard let connection = readConnection.connection else {
            for work in jobs { work.fail(DatabaseWork.closed) }
            return
        }
        for work in jobs {
            // SQLite ends a transaction by itself after some errors (out of memory, I/O): the
            // next read opens a new one rather than run statement by statement.
            if !connection.inTransaction {
                do {
                    try connection.control("BEGIN")
                } catch {
                    work.fail(error)
                    continue
                }
            }
            let (_, complete) = work.run(SQLiteTransaction(connection: connection, logEvents: false))
            complete()
        }
        if connection.inTransaction { try? connection.control("COMMIT") }
    }

    /// Runs a batch of writes in one transaction; resumes the callers after the commit (or
    /// fails them all with the commit's error), then publishes the committed events in log order.
    /// Savepoints only when a write fails (`DatabaseWork.runBatch`).
    private func commit(_ writes: [DatabaseWork], on connection: SQLiteConnection) {
        guard !writes.isEmpty else { return }
        do {
            try connection.control("BEGIN IMMEDIATE")
        } catch {
            logger.error("cannot begin a transaction", metadata: ["error": "\(error)"])
            for work in writes { work.fail(error) }
            return
        }
        let outcome: BatchOutcome
        do {
            outcome = try DatabaseWork.runBatch(
                writes, transaction: { SQLiteTransaction(connection: connection, logEvents: true) }, control: connection.control,
                restart: {
                    try connection.control("ROLLBACK"); try connection.control("BEGIN IMMEDIATE")
                })
        } catch {
            // The transaction machinery itself failed: nothing in the batch is applied.
            try? connection.executeScript("ROLLBACK")
            logger.error("transaction failed; no write in the batch was applied", metadata: ["error": "\(error)"])
            for pending in writes { pending.fail(error) }
            return
        }
        // One write alone and it failed: nothing to commit (what it changed before it threw goes).
        guard outcome.kept else {
            try? connection.executeScript("ROLLBACK")
            for complete in outcome.completions { complete() }
            return
        }
        do {
            try connection.control("COMMIT")
        } catch {
            try? connection.executeScript("ROLLBACK")
            logger.error("commit failed; no write in the batch was applied", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
            for work in writes { work.fail(error) }
            return
        }
        for complete in outcome.completions { complete() }
        outbox?.committed(outcome.events)
    }
}

/// A connection used only by its pool's single thread, one drain job at a time.
private final class ConnectionBox: @unchecked Sendable {  // safe: only the owning pool's one drain job touches it
    private(set) var connection: SQLiteConnection?
    init(_ connection: SQLiteConnection) { self.connection = connection }
    /// Closes the connection (SQLite closes it as the last reference goes).
    func close() { connection = nil }
}

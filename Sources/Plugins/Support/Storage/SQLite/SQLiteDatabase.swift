import Bus
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// SQLite behind the `Database` protocol: WAL, `synchronous=FULL`, foreign keys on, a busy
/// timeout. One thread owns the write connection; another owns a read-only connection, so
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
    private let queue = Mutex<(jobs: [Job], closed: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)
    private let reads = Mutex<(jobs: [Work], closing: (@Sendable () -> Void)?, closed: Bool)>(([], nil, false))
    private let readWake = DispatchSemaphore(value: 0)
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
        let box = ConnectionBox(connection)
        let readerBox = ConnectionBox(reader)
        pthread_detach(OSThread.start(name: "appd-db-write") { [self] in serve(box.take()) })
        pthread_detach(OSThread.start(name: "appd-db-read") { [self] in serveReads(readerBox.take()) })
    }

    /// Publishes committed events on `bus` from now on.
    public func attach(bus: EventBus) {
        self.bus.withLock { $0 = bus }
    }

    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue(.write(Self.work(body, continuation))) {
                continuation.resume(throwing: StorageError(kind: .closed, message: "the database is closed"))
            }
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = reads.withLock { r -> Bool in
                guard !r.closed else { return false }
                r.jobs.append(Self.work(body, continuation))
                return true
            }
            guard accepted else {
                return continuation.resume(throwing: StorageError(kind: .closed, message: "the database is closed"))
            }
            readWake.signal()
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

    /// Finishes queued reads and writes, then closes both connections.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let accepted = reads.withLock { r -> Bool in
                guard !r.closed else { return false }
                r.closed = true
                r.closing = { continuation.resume() }
                return true
            }
            if accepted { readWake.signal() } else { continuation.resume() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            enqueue(.close { continuation.resume() }) { continuation.resume() }
        }
    }

    private func enqueue(_ job: Job, ifClosed: () -> Void) {
        let accepted = queue.withLock { q -> Bool in
            guard !q.closed else { return false }
            q.jobs.append(job)
            if case .close = job { q.closed = true }
            return true
        }
        guard accepted else { return ifClosed() }
        wake.signal()
    }

    // MARK: The database thread

    private func serve(_ connection: SQLiteConnection) {
        var connection: SQLiteConnection? = connection
        while let open = connection {
            wake.wait()
            let jobs = queue.withLock { q -> [Job] in
                defer { q.jobs.removeAll(keepingCapacity: true) }
                return q.jobs
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
                    connection = nil
                    done()
                }
            }
            commit(writes, on: open)
        }
    }

    /// The reader thread: each read in its own transaction, a consistent snapshot of the last commit.
    private func serveReads(_ connection: SQLiteConnection) {
        while true {
            readWake.wait()
            let (jobs, closing) = reads.withLock { r -> ([Work], (@Sendable () -> Void)?) in
                defer { r.jobs.removeAll(keepingCapacity: true) }
                return (r.jobs, r.closed ? r.closing : nil)
            }
            for work in jobs { read(work, on: connection) }
            if let closing {
                closing()
                return  // the connection closes as this thread lets go of it
            }
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
                if succeeded {
                    try connection.control("RELEASE w")
                    events += transaction.events
                } else {
                    // The closure threw: undo exactly its changes; the others stay.
                    try connection.executeScript("ROLLBACK TO w; RELEASE w")
                }
                completions.append(complete)
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

/// Hands the connection to the database thread, which alone uses it from then on.
private final class ConnectionBox: @unchecked Sendable {  // safe: handed over once, before the thread starts
    private var connection: SQLiteConnection?
    init(_ connection: SQLiteConnection) { self.connection = connection }
    func take() -> SQLiteConnection {
        // Safe: called exactly once, by the thread this box was made for.
        guard let connection else { preconditionFailure("connection taken twice") }
        self.connection = nil
        return connection
    }
}

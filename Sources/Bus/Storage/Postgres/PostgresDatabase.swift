// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
#if canImport(Glibc)
import Glibc
import Runtime
#endif

/// PostgreSQL behind the `Database` protocol, for several appd instances on one database.
///
/// **Writes** run on one connection and thread per instance with the same group commit as
/// SQLite: every write waiting is run in one transaction, each in its own savepoint, one
/// commit for all; a caller is resumed only after the commit. Every write transaction first
/// takes the database's **advisory write lock** (`pg_advisory_xact_lock`, held to the commit),
/// so writes are serialised across instances as SQLite serialises them in one. That one lock
/// gives what must hold across instances: event sequence order is commit order (a `since`
/// reader never skips an event that commits late), quotas and throttling counts are exact,
/// a webhook's idempotency key is seen by the second instance, migrations run once.
/// Instances still scale what is not a write: reads, sessions, streams, plugins.
///
/// **Reads** run on `readers` connections (each its own thread), each in a read-only
/// repeatable-read transaction: one consistent snapshot of the last commit.
///
/// **Events** committed by any instance reach this instance's bus through `PostgresEventFeed`
/// (LISTEN/NOTIFY, in commit order).
public final class PostgresDatabase: Database {
    public struct Options: Sendable {
        /// Writes folded into one commit at most.
        public var maxBatch: Int = 256
        /// Read connections (and threads).
        public var readers: Int = 4
        /// `statement_timeout` and `lock_timeout` of every connection, in seconds: no wait on
        /// the server is unbounded.
        public var statementTimeoutSeconds: Int = 30
        /// Off only in the test that shows what goes wrong without the write lock.
        var serializeWrites = true
        public init() {}
    }

    /// The URL without its password, for logs and status.
    public let redactedURL: String
    public var dialect: SQLDialect { .postgres }
    public var sharedAcrossInstances: Bool { true }

    let options: Options
    let namespace: PostgresNamespace
    private let writes: DrainQueue<DatabaseJob>
    private let writeConnection: PostgresConnectionBox
    private let readers: [(queue: DrainQueue<DatabaseWork>, connection: PostgresConnectionBox)]
    private let nextReader = Atomic<Int>(0)
    let feed: PostgresEventFeed
    private let leases: PostgresLeases
    private let outbox: EventOutbox?
    private let logger: Logger
    /// Batches of this instance's events committed, for the feed to match with their NOTIFY.
    private let batchCounter = Atomic<Int>(0)

    /// Connects, creates the event log if this is a new database (under the write lock, so
    /// instances starting together do not race), and starts listening for events.
    public init(url: String, outbox: EventOutbox?, options: Options = Options(), logger: Logger = Logger(label: "appd.storage")) throws {
        self.redactedURL = PostgresURL.redacted(url)
        self.options = options
        self.logger = logger
        let setup = "SET statement_timeout = '\(options.statementTimeoutSeconds)s'; SET lock_timeout = '\(options.statementTimeoutSeconds)s'; SET application_name = 'appd/\(getpid())'; SET client_min_messages = warning"
        let connect: @Sendable () throws -> PostgresConnection = { try PostgresConnection(conninfo: url, setup: setup) }
        let writer = try connect()
        let namespace = try PostgresNamespace(writer)
        self.namespace = namespace
        try PostgresSchema.create(on: writer, namespace: namespace)
        self.writeConnection = PostgresConnectionBox(writer, connect: connect)
        self.writes = DrainQueue(pool: BlockingPool(name: "appd-pg-write", threads: 1, queueLimit: 4))
        self.readers = try (0..<max(1, options.readers)).map { i in
            (DrainQueue(pool: BlockingPool(name: "appd-pg-read\(i)", threads: 1, queueLimit: 4)), PostgresConnectionBox(try connect(), connect: connect))
        }
        self.outbox = outbox
        self.feed = try PostgresEventFeed(connection: PostgresConnectionBox(try connect(), connect: connect), namespace: namespace, outbox: outbox, logger: logger)
        self.leases = PostgresLeases(connection: PostgresConnectionBox(nil, connect: connect), namespace: namespace, logger: logger)
        feed.start()
    }

    /// Opens the database on a thread of its own: connecting and creating the schema block on
    /// the network and on other instances' locks, which must not hold a Swift concurrency thread.
    public static func open(
        url: String, outbox: EventOutbox?, options: Options = Options(), logger: Logger = Logger(label: "appd.storage")
    ) async throws -> PostgresDatabase {
        try await opener.run { try PostgresDatabase(url: url, outbox: outbox, options: options, logger: logger) }
    }

    private static let opener = BlockingPool(name: "appd-pg-open", threads: 4, queueLimit: 1024)

    /// Not appd's to do: the server's own tools copy a PostgreSQL database consistently.
    public func backup(into path: String) async throws {
        throw StorageError(
            kind: .other,
            message: "appd backs up SQLite only: back up a PostgreSQL database with the server's own tools (pg_dump, or pg_basebackup with WAL archiving for point-in-time recovery)")
    }

    public func holdingLease(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await leases.holding(name, body)
    }

    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        try await DatabaseWork.write(body, on: writes) { [self] in drainWrites($0) }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any Transaction) throws -> T) async throws -> T {
        let reader = readers[nextReader.add(1, ordering: .relaxed).oldValue % readers.count]
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let queued = reader.queue.enqueue(DatabaseWork(body, continuation)) { jobs in Self.read(jobs, on: reader.connection) }
            if !queued { continuation.resume(throwing: DatabaseWork.closed) }
        }
    }

    /// Finishes queued writes and reads, stops the feed and the leases, closes every connection.
    public func close() async {
        guard readers.allSatisfy({ $0.queue.close() }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = writes.enqueue(.close { continuation.resume() }, closes: true) { [self] in drainWrites($0) }
            if !queued { continuation.resume() }
        }
        for reader in readers {
            try? await reader.queue.pool.run { reader.connection.close() }
            reader.queue.pool.close()
        }
        writes.pool.close()
        await feed.stop()
        await leases.close()
        outbox?.finish()
    }

    /// The server processes of the write connection and the event feed's (tests cut them).
    func backendPIDs() async throws -> [Int32] {
        let writer = try await writes.pool.run { [self] in try writeConnection.open().backendPID }
        return [writer, feed.backendPID.load(ordering: .relaxed)]
    }

    // MARK: The database threads

    /// A write transaction's start, one round trip: BEGIN and the write lock.
    private var begin: String {
        options.serializeWrites ? "BEGIN; SELECT pg_advisory_xact_lock(\(namespace.key), 1)" : "BEGIN"
    }

    private func drainWrites(_ jobs: [DatabaseJob]) {
        DatabaseWork.drain(jobs, maxBatch: options.maxBatch, commit: commit, close: { writeConnection.close() })
    }

    private static let beginRead = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    /// The reads waiting for one connection, each in its own read-only snapshot. A caller is
    /// answered before the round trip that ends its transaction, and that round trip also
    /// begins the next read's ("COMMIT; BEGIN …"): two round trips per read under load.
    private static func read(_ jobs: [DatabaseWork], on box: PostgresConnectionBox) {
        var open = false
        for work in jobs {
            do {
                let connection: PostgresConnection
                if open {
                    connection = try box.open()
                    try connection.executeScript("COMMIT; " + beginRead)
                } else {
                    connection = try box.beginTransaction(beginRead)
                    open = true
                }
                let (_, complete) = work.run(PostgresTransaction(connection: connection, logEvents: false))
                complete()
            } catch {
                open = false
                box.rollBack()
                work.fail(error)
            }
        }
        if open, let connection = try? box.open() {
            do { try connection.control("COMMIT") } catch { box.rollBack() }
        }
    }

    /// One transaction for the batch: the write lock, a savepoint per write (when there are
    /// several), the NOTIFY that tells every instance's feed, the commit; then the callers.
    private func commit(_ writes: [DatabaseWork]) {
        guard !writes.isEmpty else { return }
        let connection: PostgresConnection
        do {
            connection = try writeConnection.beginTransaction(begin)
        } catch {
            abandon(writes, error, on: writeConnection)
            return
        }
        let outcome: BatchOutcome
        do {
            outcome = try DatabaseWork.runBatch(
                writes, transaction: { PostgresTransaction(connection: connection, logEvents: true) }, control: connection.control,
                restart: { try connection.control("ROLLBACK"); try connection.executeScript(begin) })
        } catch {
            abandon(writes, error, on: writeConnection)
            return
        }
        // One write alone and it failed: nothing to commit.
        guard outcome.kept else {
            try? connection.control("ROLLBACK")
            for complete in outcome.completions { complete() }
            return
        }
        let batch = batchCounter.add(1, ordering: .relaxed).oldValue
        do {
            var events = outcome.events
            if !outcome.deferred.isEmpty {
                events += try Self.log(outcome.deferred, on: connection)
                events.sort { ($0.sequence ?? 0) < ($1.sequence ?? 0) }
            }
            if let first = events.first?.sequence, let last = events.last?.sequence {
                feed.expect(batch: batch, events: events)
                try connection.run("SELECT pg_notify(?, ?)", [.text(namespace.channel), .text(feed.payload(batch: batch, first: first, last: last))])
            }
            try connection.control("COMMIT")
        } catch {
            feed.forget(batch: batch)
            abandon(writes, error, on: writeConnection)
            return
        }
        for complete in outcome.completions { complete() }
    }

    /// Logs the events a batch deferred to its commit, a few hundred per statement, each
    /// redacted if an erasure of its owner came after it in the batch; returns them as logged.
    private static func log(_ entries: [DeferredEntry], on connection: PostgresConnection) throws -> [BusEvent] {
        var lastErasure: [String: Int] = [:]
        for (i, entry) in entries.enumerated() {
            if case .redaction(let owner) = entry { lastErasure[owner] = i }
        }
        var rows: [[SQLValue]] = []
        for (i, entry) in entries.enumerated() {
            guard case .event(let event, var parameters) = entry else { continue }
            let erased = event.owner.map { (lastErasure[$0] ?? -1) > i } ?? false
            if erased { parameters[2] = .text("{}") }  // the payload, as `redactEvents` leaves it
            rows.append(parameters + [.integer(erased ? 1 : 0)])
        }
        var logged: [BusEvent] = []
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + 500, rows.count)]
            let sql = """
                INSERT INTO appd_events (topic, time_ns, payload, correlation, causation, message_id, version, owner, redacted) VALUES
                """ + chunk.map { _ in "(?, ?, ?, ?, ?, ?, ?, ?, ?)" }.joined(separator: ", ") + " RETURNING *"
            logged += try connection.runUnprepared(sql, chunk.flatMap { $0 }).map(EventLog.event)
            start += chunk.count
        }
        return logged
    }

    /// Rolls back and fails every caller of the batch with `error`. If the link broke, whether
    /// the commit happened is unknown to the caller: the error says so (kind `io`).
    private func abandon(_ writes: [DatabaseWork], _ error: any Error, on box: PostgresConnectionBox) {
        box.rollBack()
        logger.error("a write transaction failed; no write in the batch was applied", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
        for work in writes { work.fail(error) }
    }
}

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
/// SQLite: every write waiting is run in one transaction, each in its own savepoint when one
/// fails, one commit for all; a caller is resumed only after the commit. Instances write at
/// the same time: each write transaction is `SERIALIZABLE`, so together they have the effect
/// of some serial order (quotas, throttles and idempotency keys hold across instances); a batch
/// that loses a race is rolled back and run again (`attempts`), its callers none the wiser.
///
/// **The event log** is read in position order below the horizon (`SQLDialect.eventHorizon`,
/// `PostgresWriteAttempt`): an event that commits late is never skipped by a reader that
/// read past it, whichever instance wrote it.
///
/// **Reads** run on `readers` connections (each its own thread), each in a read-only
/// repeatable-read transaction: one consistent snapshot of the last commit.
///
/// **Events** committed by any instance reach this instance's bus through `PostgresEventFeed`
/// (LISTEN/NOTIFY wakes it; it reads the log below the horizon).
public final class PostgresDatabase: Database {
    public struct Options: Sendable {
        /// Writes folded into one commit at most.
        public var maxBatch: Int = 256
        /// Read connections (and threads).
        public var readers: Int = 4
        /// `statement_timeout` and `lock_timeout` of every connection, in seconds: no wait on
        /// the server is unbounded.
        public var statementTimeoutSeconds: Int = 30
        public init() {}
    }

    /// The URL without its password, for logs and status.
    public let redactedURL: String
    public var dialect: SQLDialect { .postgres }
    public var sharedAcrossInstances: Bool { true }
    /// Heard on the feed's connection.
    public let signals: DeploymentSignals?

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

    /// Connects, creates the event log if this is a new database (under the schema lock, so
    /// instances starting together do not race), and starts listening for events.
    public init(url: String, outbox: EventOutbox?, options: Options = Options(), logger: Logger = Logger(label: "appd.storage")) throws {
        self.redactedURL = PostgresURL.redacted(url)
        self.options = options
        self.logger = logger
        let setup =
            "SET statement_timeout = '\(options.statementTimeoutSeconds)s'; SET lock_timeout = '\(options.statementTimeoutSeconds)s'; SET application_name = "
            + "'appd/\(getpid())'; SET client_min_messages = warning"
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
        let signals = DeploymentSignals()
        self.signals = signals
        self.feed = try PostgresEventFeed(
            connection: PostgresConnectionBox(try connect(), connect: connect), namespace: namespace, outbox: outbox, signals: signals, logger: logger)
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
            message:
                "appd backs up SQLite only: back up a PostgreSQL database with the server's own tools (pg_dump, or pg_basebackup with WAL archiving for point-in-time recovery)")
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

    /// A write transaction's start. Serializable: the transactions of several instances running
    /// at once have the effect of one serial order, as on SQLite's one writer; one that would
    /// break it fails with a serialization failure and its batch runs again (`commit`).
    static let begin = "BEGIN ISOLATION LEVEL SERIALIZABLE"

    /// Times a batch that lost a race with another transaction runs before its callers are told
    /// to retry (a `busy` error).
    static let attempts = 8

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
                let (_, complete) = work.run(PostgresTransaction(connection: connection, attempt: nil))
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

    /// From this attempt on, a batch that keeps losing races runs holding the deployment's
    /// escalation lock: a session advisory lock taken *before* its transaction begins (so its
    /// snapshot comes after the previous holder's commit). Batches that collided take turns
    /// instead of colliding again: a hot row written from every instance still makes progress.
    static let escalateAt = 3

    /// Commits a batch, running it again (after a short random pause, growing each time) while
    /// it loses races with other instances' transactions, from `escalateAt` on under the
    /// escalation lock; after `attempts`, its callers get the last serialization failure
    /// (`busy`: retry).
    private func commit(_ writes: [DatabaseWork]) {
        guard !writes.isEmpty else { return }
        var erasing: [String] = []
        for attempt in 1...Self.attempts {
            let escalated = attempt >= Self.escalateAt
            var held: Int?
            if escalated || !erasing.isEmpty {
                do {
                    let link = try writeConnection.open()
                    if escalated { try link.run("SELECT pg_advisory_lock(?, ?)", namespace.escalationLock) }
                    if !erasing.isEmpty {
                        try link.run(PostgresSchema.erasureLock(owners: erasing.count, .beforeTransaction), erasing.map { SQLValue.text($0) })
                    }
                    held = writeConnection.opens
                } catch {
                    abandon(writes, error, on: writeConnection)
                    return
                }
            }
            let tried = PostgresWriteAttempt()
            let conflict = commitOnce(writes, tried)
            // Released on the connection that took them (a broken link released them already).
            if let held, writeConnection.opens == held, let link = try? writeConnection.open() {
                if escalated { _ = try? link.run("SELECT pg_advisory_unlock(?, ?)", namespace.escalationLock) }
                if !erasing.isEmpty {
                    _ = try? link.run(PostgresSchema.erasureLock(owners: erasing.count, .release), erasing.map { SQLValue.text($0) })
                }
            }
            guard let conflict else { return }
            erasing = tried.erasures.sorted()
            Metrics.shared.increment("appd_write_conflicts_total", help: "Write batches run again after a serialization failure or deadlock with a concurrent transaction.")
            if attempt == Self.attempts {
                logger.warning(
                    "a write batch kept conflicting with concurrent transactions; its callers are told to retry", metadata: ["attempts": "\(attempt)", "writes": "\(writes.count)"])
                for work in writes { work.fail(conflict) }
                return
            }
            usleep(UInt32.random(in: 0...(500 << min(attempt, 6))))
        }
    }

    /// One transaction for the batch: a savepoint per write (when one of them fails), the
    /// NOTIFY that tells every instance's feed, the commit; then the callers. Returns the
    /// serialization failure when the transaction lost a race (rolled back, nobody answered).
    ///
    /// Keyed calls' rows go with the commit (`deferKeys`); if one of their keys was taken
    /// meanwhile (a retry on another instance), the commit fails on it and the batch runs once
    /// more with each key kept in its write's own savepoint, where the collision is that call's alone.
    private func commitOnce(_ writes: [DatabaseWork], _ attempt: PostgresWriteAttempt, deferKeys: Bool = true) -> StorageError? {
        let connection: PostgresConnection
        do {
            connection = try writeConnection.beginTransaction(Self.begin)
        } catch {
            abandon(writes, error, on: writeConnection)
            return nil
        }
        let outcome: BatchOutcome
        do {
            outcome = try DatabaseWork.runBatch(
                writes, deferKeys: deferKeys, transaction: { PostgresTransaction(connection: connection, attempt: attempt) },
                control: { sql throws(StorageError) in try attempt.noting { () throws(StorageError) in try connection.control(sql) } },
                restart: {
                    try connection.control("ROLLBACK")
                    attempt.restarted()
                    try connection.executeScript(Self.begin)
                })
        } catch {
            if let conflict = Self.conflict(error, attempt) { writeConnection.rollBack(); return conflict }
            abandon(writes, error, on: writeConnection)
            return nil
        }
        if let conflict = Self.conflict(nil, attempt) { writeConnection.rollBack(); return conflict }
        // One write alone and it failed: nothing to commit.
        guard outcome.kept else {
            try? connection.control("ROLLBACK")
            for complete in outcome.completions { complete() }
            return nil
        }
        do {
            // The batch's events, the NOTIFY that wakes every instance's feed (with the batch's
            // signals) and the COMMIT go in one round trip (pipeline mode).
            let owners = Set(outcome.deferred.lazy.filter { !$0.keptThroughErasure }.compactMap(\.event.owner)).sorted()
            let lockStatements = owners.isEmpty ? [] : [(sql: PostgresSchema.erasureLock(owners: owners.count, .shared), parameters: owners.map { SQLValue.text($0) })]
            let keyStatements = Self.keyStatements(outcome.keys)
            var statements = lockStatements + keyStatements + Self.logStatements(outcome.deferred)
            let firstLog = lockStatements.count + keyStatements.count, logStatements = statements.count
            var notifications: [SQLValue] = []
            let eventCount = outcome.events.count + outcome.deferred.count
            if eventCount > 0 { notifications += [.text(namespace.channel), .text(PostgresEventFeed.payload(events: eventCount))] }
            for message in Set(attempt.signals) { notifications += [.text(namespace.signalChannel), .text(message)] }
            if !notifications.isEmpty {
                statements.append((sql: "SELECT " + Array(repeating: "pg_notify(?, ?)", count: notifications.count / 2).joined(separator: ", "), parameters: notifications))
            }
            statements.append((sql: "COMMIT", parameters: []))
            let results = try attempt.noting { () throws(StorageError) in try connection.runPipelined(statements) }
            // Committed: an event that would not decode is left for the feed to read from the log.
            feed.committed(outcome.events + results[firstLog..<logStatements].flatMap { $0.compactMap { try? EventLog.event($0) } }, erasing: attempt.erasures)
        } catch  where error.kind == .constraint && !outcome.keys.isEmpty {
            // A key was taken by another attempt of its call: each write keeps its key itself.
            writeConnection.rollBack()
            attempt.restarted()
            return commitOnce(writes, attempt, deferKeys: false)
        } catch {
            if let conflict = Self.conflict(error, attempt) { writeConnection.rollBack(); return conflict }
            abandon(writes, error, on: writeConnection)
            return nil
        }
        for complete in outcome.completions { complete() }
        return nil
    }

    /// The serialization failure or deadlock the attempt met, if any (`error`, or one a
    /// closure caught and turned into its own failure).
    private static func conflict(_ error: (any Error)?, _ attempt: PostgresWriteAttempt) -> StorageError? {
        if let failure = error as? StorageError, failure.isSerializationFailure { return failure }
        guard attempt.conflicted else { return nil }
        return StorageError(kind: .busy, message: "a concurrent transaction changed the same data; retry (SQLSTATE 40001)")
    }

    /// The statements that keep a batch's keyed calls' rows (`DatabaseWork.run(deferKeys:)`), a
    /// few hundred per statement; a key already there fails the statement (and the commit).
    private static func keyStatements(_ keys: [[SQLValue]]) -> [(sql: String, parameters: [SQLValue])] {
        stride(from: 0, to: keys.count, by: 500).map { start in
            let chunk = keys[start..<min(start + 500, keys.count)]
            return (sql: IdempotencyLog.insert + " VALUES " + chunk.map { _ in "(?, ?, ?, ?, ?, ?)" }.joined(separator: ", "), parameters: chunk.flatMap { $0 })
        }
    }

    /// The statements that log the events a batch deferred to its commit, a few hundred per
    /// statement, each at `appd_event_position()` plus the index it was given when appended, and
    /// as a tombstone when its owner was erased (`appd_erased_owners`, this transaction's own
    /// erasures included) unless the erasing write appended it after the erasure. Each returns
    /// its events as logged, in order. An erasure committing on another instance at the same
    /// moment cannot slip between: the check reads the erased owners and the erasure's `UPDATE`
    /// reads the owner's events, so under SERIALIZABLE one of the two transactions fails with a
    /// serialization failure and runs again, seeing the other; the erasure lock taken before
    /// these statements (`PostgresSchema.erasureLock`) makes it the batch.
    private static func logStatements(_ entries: [DeferredEntry]) -> [(sql: String, parameters: [SQLValue])] {
        let row = "(?::text, ?::bigint, ?::text, ?::text, ?::text, ?::text, ?::bigint, ?::text, ?::bigint, ?::bigint)"
        var statements: [(sql: String, parameters: [SQLValue])] = []
        var start = 0
        while start < entries.count {
            let chunk = entries[start..<min(start + 500, entries.count)]
            let sql = """
                INSERT INTO appd_events (topic, time_ns, payload, correlation, causation, message_id, version, owner, redacted, seq)
                SELECT topic, time_ns, CASE WHEN erased THEN '{}' ELSE payload END, correlation, causation, message_id, version, owner,
                  CASE WHEN erased THEN 1 ELSE 0 END, appd_event_position() + i
                FROM (SELECT v.*, v.kept = 0 AND EXISTS (SELECT 1 FROM appd_erased_owners e WHERE e.owner = v.owner) AS erased
                  FROM (VALUES \(Array(repeating: row, count: chunk.count).joined(separator: ", ")))
                  AS v(topic, time_ns, payload, correlation, causation, message_id, version, owner, kept, i)) AS r
                RETURNING *
                """
            statements.append((sql: sql, parameters: chunk.flatMap { $0.parameters + [.integer($0.keptThroughErasure ? 1 : 0), .integer($0.index)] }))
            start += chunk.count
        }
        return statements
    }

    /// Rolls back and fails every caller of the batch with `error`. If the link broke, whether
    /// the commit happened is unknown to the caller: the error says so (kind `io`).
    private func abandon(_ writes: [DatabaseWork], _ error: any Error, on box: PostgresConnectionBox) {
        box.rollBack()
        logger.error("a write transaction failed; no write in the batch was applied", metadata: ["error": "\(error)", "writes": "\(writes.count)"])
        for work in writes { work.fail(error) }
    }
}

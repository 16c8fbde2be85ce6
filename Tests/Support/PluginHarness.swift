// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
#if canImport(Glibc)
import Glibc
#endif
import PluginKit
import Storage
import EventDelivery

/// Plugins wired as appd wires them, for tests: a real SQLite file in a fresh private
/// directory (or a fresh schema on a real PostgreSQL: `TestDatabase`), every plugin's migrations, the bus with the admin and plugin-scope gates and the
/// plugins' own gates in the designed order, each plugin's topics registered, the plugins
/// started in the order given. One harness for every plugin test target; each target adds its
/// feature's helpers in an extension. Made only inside a test's `TestScope` (`@Suite(.cleansUp)`),
/// which closes its database and removes its directory when the test ends, whatever it did.
public struct PluginHarness: Sendable {
    public let bus: EventBus
    public let database: any Database
    public let context: PluginContext
    public let clock: TestClock
    /// The private directory the database lives in.
    public let directory: String
    public let databasePath: String
    /// Everything the plugins logged.
    public let log: InMemoryLogHandler
    public let plugins: [any Plugin]

    /// `plugins` gets the harness's clock; `start` says which of them to start now (the
    /// others can be started later with `start(_:)`). `postgres`: a PostgreSQL URL to open
    /// whatever the engine under test (two harnesses on one URL are two instances of a deployment).
    public static func make(
        clock: TestClock = TestClock(), databasePath: String? = nil, postgres: String? = nil, start: (any Plugin) -> Bool = { _ in true },
        _ plugins: (TestClock) throws -> [any Plugin]
    ) async throws -> PluginHarness {
        let scope = try TestScope.required(by: "PluginHarness")
        let directory = try scope.directory()
        let path = databasePath ?? directory + "/appd.db"
        let plugins = try plugins(clock)
        let outbox = EventOutbox()
        let database: any Database
        if let postgres {
            var options = PostgresDatabase.Options()
            options.readers = 1
            database = try await PostgresDatabase.open(url: postgres, outbox: outbox, options: options)
        } else {
            database = try await TestDatabase.open(path: path, outbox: outbox)
        }
        scope.closes(database)
        try await Migrator.migrate(database, plugins.flatMap(\.migrations))
        let bus = EventBus(gates: [AdminGate(), PluginScopeGate(), IdempotencyGate(database: database)] + plugins.flatMap { $0.gates(database: database) })
        _ = OutboxRelay(outbox: outbox, bus: bus).start()
        // As the plugin host does: each plugin's event types own their topics.
        for plugin in plugins { try bus.topics.register(plugin.manifest.events, publisher: plugin.manifest.name) }
        let log = InMemoryLogHandler()
        let context = PluginContext(bus: bus, database: database, eventLog: EventLog(database: database), logger: Logger(label: "test", handler: log))
        let harness = PluginHarness(
            bus: bus, database: database, context: context, clock: clock, directory: directory, databasePath: path, log: log, plugins: plugins)
        for plugin in plugins where start(plugin) { try await harness.start(plugin) }
        return harness
    }

    /// Starts one of the plugins and, as the host does, checks its handlers against its
    /// interface and installs them.
    public func start(_ plugin: any Plugin) async throws {
        let handlers = HandlerSet()
        let manifest = plugin.manifest
        try await plugin.start(
            PluginContext(bus: context.bus, database: context.database, eventLog: context.eventLog, logger: context.logger, handlers: handlers))
        try handlers.activate(on: bus, interface: try manifest.interface.map { try VarlinkInterface(parsing: $0) }, plugin: manifest.name)
    }

    /// The plugin of type `P` this harness was built with.
    public func plugin<P: Plugin>(_ type: P.Type) -> P {
        guard let found = plugins.lazy.compactMap({ $0 as? P }).first else { preconditionFailure("the harness has no \(P.self)") }
        return found
    }

    /// A caller on a fresh connection, as the socket server makes one (not the daemon's uid).
    public func connection() -> Caller {
        Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1), connection: ConnectionContext(id: Int.random(in: 1...1_000_000), peer: nil))
    }

    /// The daemon's own uid: passes the admin gate.
    public var admin: Caller { Caller(peer: PeerCredentials(uid: getuid(), gid: getgid(), pid: getpid())) }

    /// Signs `email` up (password "password for <email>"), signs in and authenticates a fresh
    /// connection; completes onboarding unless told not to. Through the wire form (the
    /// contract's command as JSON, checked against the IDL), as a client would.
    public func user(_ email: String, onboarded: Bool = true) async throws -> TestUser {
        let signedUp = try await wire(AuthInterface.SignUp(email: email, password: "password for \(email)"))
        let user = try await signIn(email)
        if onboarded { _ = try await wire(AuthInterface.CompleteOnboarding(), as: user.caller) }
        guard signedUp.user.id == user.userId else { throw HarnessError("SignUp returned another user id: \(signedUp.user.id)") }
        return user
    }

    /// Signs an existing user (password "password for <email>") in on a fresh connection.
    public func signIn(_ email: String) async throws -> TestUser {
        let session = try await wire(AuthInterface.SignIn(email: email, password: "password for \(email)")).session
        let caller = connection()
        _ = try await wire(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        return TestUser(caller: caller, userId: session.user.id, accessToken: session.accessToken)
    }

    /// Calls `command` through the bus's type-erased path (JSON in, IDL-checked, JSON out), and
    /// decodes the reply as the contract's type.
    public func wire<C: Command>(_ command: C, as caller: Caller? = nil) async throws -> C.Reply {
        let parameters = try JSONValue(encoding: command)
        let reply: JSONValue
        if let caller {
            reply = try await bus.call(method: C.method, parameters: parameters, as: caller)
        } else {
            reply = try await bus.call(method: C.method, parameters: parameters)
        }
        return try reply.decode(as: C.Reply.self)
    }

    /// Every byte the database keeps, as text (closes the database): the SQLite file and its
    /// WAL, or every row of every table in the PostgreSQL schema.
    public func everythingStored() async throws -> String {
        if database.dialect == .postgres {
            let text = try await database.read { tx in
                let tables = try tx.query("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema()").compactMap { $0.text("t") }
                return try tables.map { table in
                    try tx.query("SELECT COALESCE(string_agg(r::text, ' '), '') AS rows FROM \"\(table)\" r").first?.text("rows") ?? ""
                }.joined(separator: "\n")
            }
            await database.close()
            return text
        }
        await database.close()
        var bytes: [UInt8] = []
        for name in ["appd.db", "appd.db-wal"] {
            guard let file = fopen(directory + "/" + name, "rb") else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                bytes += chunk[0..<n]
                if n < chunk.count { break }
            }
            fclose(file)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The integer column `n` of the first row of `sql` (a `SELECT COUNT(*) AS n …`).
    public func count(_ sql: String) async throws -> Int {
        Int(try await database.read { try $0.query(sql).first?.integer("n") } ?? -1)
    }

    /// Waits until every event committed so far is final (below the log's horizon, where
    /// readers of the log take it). On PostgreSQL the horizon is the server's: other tests'
    /// transactions hold it back for moments; on SQLite it is settled at once.
    public func settled() async throws {
        guard try await context.eventLog.settle(within: .seconds(10)) else { throw HarnessError("the event log did not settle within 10 s") }
    }

    /// The log's events after `after` once it has settled (see `settled`).
    public func loggedEvents(after: Int64 = 0, limit: Int) async throws -> [BusEvent] {
        try await settled()
        return try await context.eventLog.events(after: after, limit: limit)
    }
}

/// A signed-in user: the connection that is authenticated as them, their id, their token.
public struct TestUser: Sendable {
    public let caller: Caller
    public let userId: String
    public let accessToken: String
}

/// The harness could not be built; says why.
public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension TestUser {
    /// The connection and the user id, for `let (caller, id) = …`.
    public var identity: (caller: Caller, userId: String) { (caller, userId) }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import Synchronization
import Testing
import TestSupport
@testable import PluginKit
@testable import Storage

final class Journal: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

/// A plugin for tests: records start/stop, may fail to start, may run a flaky service.
struct TestPlugin: Plugin {
    let manifest: PluginManifest
    let journal: Journal
    var failStart = false
    var flakyFailures = 0
    var migrations: [Migration] = []
    let failures = FailureCounter()

    init(_ name: String, dependsOn: [String] = [], journal: Journal, failStart: Bool = false, flakyFailures: Int = 0, migrations: [Migration] = []) {
        self.manifest = PluginManifest(name: name, version: "1.0", dependencies: dependsOn)
        self.journal = journal
        self.failStart = failStart
        self.flakyFailures = flakyFailures
        self.migrations = migrations
    }

    func start(_ context: PluginContext) async throws {
        if failStart { throw Boom() }
        journal.add("start \(manifest.name)")
    }

    func stop(_ context: PluginContext) async { journal.add("stop \(manifest.name)") }

    func services(_ context: PluginContext) -> [any Service] {
        guard flakyFailures > 0 else { return [] }
        return [FlakyService(failures: failures, failTimes: flakyFailures, journal: journal)]
    }
}

final class FailureCounter: Sendable {
    let count = Mutex(0)
    func next() -> Int {
        count.withLock {
            $0 += 1; return $0
        }
    }
}

struct FlakyService: Service {
    let failures: FailureCounter
    let failTimes: Int
    let journal: Journal
    var name: String { "flaky" }
    func run() async throws {
        if failures.next() <= failTimes { throw Boom() }
        journal.add("flaky healthy")
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
    }
}

/// A plugin context on a fresh database, closed and removed when the test ends (`.cleansUp`).
func makeContext() throws -> (PluginContext, String) {
    let scope = try TestScope.required(by: "makeContext")
    let dir = try scope.directory("appd-plugins")
    let bus = EventBus()
    let database = try SQLiteDatabase(path: dir + "/appd.db", outbox: .relaying(to: bus))
    scope.closes(database)
    let context = PluginContext(
        bus: bus, database: database, eventLog: EventLog(database: database),
        logger: Logger(label: "test", handler: InMemoryLogHandler()))
    return (context, dir)
}

func quickOptions() -> PluginHost.Options {
    var options = PluginHost.Options()
    options.initialBackoff = .milliseconds(5)
    options.maxBackoff = .milliseconds(20)
    options.healthyAfter = .seconds(1)
    return options
}

@Suite(.cleansUp) struct PluginHostTests {
    @Test func startsInDependencyOrderAndStopsInReverse() async throws {
        let (context, _) = try makeContext()
        let journal = Journal()
        let host = PluginHost(
            plugins: [TestPlugin("c", dependsOn: ["b"], journal: journal), TestPlugin("a", journal: journal), TestPlugin("b", dependsOn: ["a"], journal: journal)],
            disabled: [], context: context, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        await host.startAll()
        #expect(await host.statuses().map(\.name) == ["a", "b", "c"])
        #expect(await host.statuses().allSatisfy { $0.state == .running })
        await host.stopAll()
        #expect(journal.all == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
        #expect(await host.statuses().allSatisfy { $0.state == .stopped })
    }

    @Test func aCycleIsRejectedByNameAndTheRestStillStarts() async throws {
        let (context, _) = try makeContext()
        let journal = Journal()
        let host = PluginHost(
            plugins: [TestPlugin("x", dependsOn: ["y"], journal: journal), TestPlugin("y", dependsOn: ["x"], journal: journal), TestPlugin("z", journal: journal)],
            disabled: [], context: context, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        await host.startAll()
        let statuses = Dictionary(uniqueKeysWithValues: await host.statuses().map { ($0.name, $0) })
        #expect(statuses["x"]?.state == .failed)
        #expect(statuses["x"]?.lastError?.contains("plugin dependency cycle: x -> y -> x") == true)
        #expect(statuses["y"]?.state == .failed)
        #expect(statuses["z"]?.state == .running)
    }

    @Test func aFailedStartSkipsItsDependantsWithTheReason() async throws {
        let (context, _) = try makeContext()
        let journal = Journal()
        let host = PluginHost(
            plugins: [
                TestPlugin("auth", journal: journal, failStart: true), TestPlugin("todos", dependsOn: ["auth"], journal: journal),
                TestPlugin("rating", journal: journal), TestPlugin("chat", dependsOn: ["missing"], journal: journal),
            ],
            disabled: [], context: context, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        await host.startAll()
        let statuses = Dictionary(uniqueKeysWithValues: await host.statuses().map { ($0.name, $0) })
        #expect(statuses["auth"]?.state == .failed)
        #expect(statuses["auth"]?.lastError == "boom")
        #expect(statuses["todos"]?.state == .failed)
        #expect(statuses["todos"]?.lastError == "skipped: its dependency 'auth' is failed")
        #expect(statuses["chat"]?.lastError == "depends on 'missing', which is not installed")
        #expect(statuses["rating"]?.state == .running)
        #expect(journal.all == ["start rating"])
    }

    @Test func aDisabledPluginIsNotStartedAndNeitherAreItsDependants() async throws {
        let (context, _) = try makeContext()
        let journal = Journal()
        let host = PluginHost(
            plugins: [TestPlugin("payments", journal: journal), TestPlugin("chat", dependsOn: ["payments"], journal: journal)],
            disabled: ["payments"], context: context, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        await host.startAll()
        let statuses = Dictionary(uniqueKeysWithValues: await host.statuses().map { ($0.name, $0) })
        #expect(statuses["payments"]?.state == .stopped)
        #expect(statuses["payments"]?.lastError == "disabled by configuration")
        #expect(statuses["chat"]?.state == .failed)
        #expect(journal.all.isEmpty)
    }

    @Test func aFailingServiceIsRestartedWithBackoffAndRecovers() async throws {
        let (context, _) = try makeContext()
        let journal = Journal()
        // Degraded until it has run `healthyAfter` since its last failure: 5 s, so that a loaded
        // machine still reads the status inside it (1 s once passed before the read).
        var options = quickOptions()
        options.healthyAfter = .seconds(5)
        let host = PluginHost(
            plugins: [TestPlugin("worker", journal: journal, flakyFailures: 3)], disabled: [], context: context,
            options: options, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        await host.startAll()
        #expect(await eventually { journal.all.contains("flaky healthy") })
        let status = try #require(await host.statuses().first)
        #expect(status.restarts == 3)
        #expect(status.state == .degraded)
        #expect(status.lastError == "flaky: boom")
        #expect(await eventually(timeout: .seconds(30)) { await host.statuses().first?.state == .running })
        await host.stopAll()
    }

    @Test func migrationsRunBeforeStart() async throws {
        let (context, _) = try makeContext()
        let journal = Journal()
        let plugin = TestPlugin(
            "notes", journal: journal,
            migrations: [Migration(plugin: "notes", version: 1, sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY)")])
        let host = PluginHost(plugins: [plugin], disabled: [], context: context, logger: Logger(label: "t", handler: InMemoryLogHandler()))
        await host.startAll()
        #expect(try await Migrator.version(of: "notes", in: context.database) == 1)
        await host.stopAll()
    }
}

struct NamedGate: Gate {
    let name: String
    var position: GatePosition = .feature
    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        try await next(envelope)
    }
}

@Suite struct GatePositionTests {
    @Test func theBusNestsGatesByPositionAndKeepsTheGivenOrderWithinOne() {
        let given: [any Gate] = [
            NamedGate(name: "paywall", position: .paywall), NamedGate(name: "custom"), NamedGate(name: "onboarding", position: .onboarding),
            NamedGate(name: "admin", position: .admin), NamedGate(name: "custom2"), NamedGate(name: "session", position: .session),
            NamedGate(name: "limits", position: .limits),
        ]
        #expect(EventBus(gates: given).chain.names == ["session", "limits", "admin", "onboarding", "paywall", "custom", "custom2"])
    }
}

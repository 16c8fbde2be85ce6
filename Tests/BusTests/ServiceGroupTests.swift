import Bus
import Synchronization
import Testing

/// A service that runs until cancelled and records that it stopped.
struct WaitingService: Service {
    let name: String
    let stopped: GateLog
    func run() async throws {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
        stopped.append(name)
    }
}

struct FailingService: Service {
    struct Boom: Error {}
    var name: String { "failing" }
    func run() async throws {
        try await Task.sleep(for: .milliseconds(20))
        throw Boom()
    }
}

@Suite struct ServiceGroupTests {
    @Test func shutdownStopsServicesInReverseOrder() async throws {
        let log = InMemoryLogHandler()
        let stopped = GateLog()
        let group = ServiceGroup(
            services: [WaitingService(name: "a", stopped: stopped), WaitingService(name: "b", stopped: stopped)],
            signals: [], logger: Logger(label: "test", level: .trace, handler: log))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(20))
        await group.triggerShutdown()
        try await running.value
        #expect(stopped.all == ["b", "a"])
        #expect(!log.records.contains { $0.level >= .warning })
    }

    @Test func aFailingServiceStopsTheOthersAndIsReported() async throws {
        let stopped = GateLog()
        let group = ServiceGroup(
            services: [WaitingService(name: "a", stopped: stopped), FailingService()], signals: [],
            logger: Logger(label: "test", handler: InMemoryLogHandler()))
        await #expect(throws: ServiceFailed.self) { try await group.run() }
        #expect(stopped.all == ["a"])
    }
}

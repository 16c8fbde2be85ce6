import Bus
import Glibc
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

/// Sends its process a signal the moment it starts, as a supervisor's SIGTERM can arrive the
/// instant appd first answers.
struct SignalsAtStart: Service {
    let signal: Int32
    var name: String { "signals-at-start" }
    func run() async throws {
        kill(getpid(), signal)
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
    }
}

@Suite struct ServiceGroupTests {
    /// CI once saw an activated appd ignore the SIGTERM sent right after its first answer: the
    /// signal came while it was ignored but not yet watched. It is caught from the start now.
    @Test func aSignalThatArrivesAsServicesStartStopsTheGroup() async throws {
        for _ in 0..<20 {
            let log = InMemoryLogHandler()
            let group = ServiceGroup(
                services: [SignalsAtStart(signal: SIGUSR2)], signals: [SIGUSR2], shutdownTimeout: .seconds(2),
                logger: Logger(label: "test", level: .debug, handler: log))
            let done = Atomic<Bool>(false)
            let run = Task {
                try await group.run()
                done.store(true, ordering: .releasing)
            }
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while !done.load(ordering: .acquiring) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            let stopped = done.load(ordering: .acquiring)
            #expect(stopped, "the group did not stop on the signal: \(log.records.map(\.message))")
            if !stopped { await group.triggerShutdown() }
            _ = await run.result
        }
    }

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

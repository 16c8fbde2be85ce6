import Bus

/// The composition root: builds each part of the daemon in a named step, top to bottom.
extension Appd {
    /// Runs the daemon until it is told to stop; returns the process exit code.
    static func start(_ options: AppdOptions) async -> Int32 {
        // 1. Logging: one bootstrap, stderr (journald priority prefixes under systemd).
        LoggingSystem.bootstrap(level: options.logLevel) { _ in StreamLogHandler.standardError() }
        let logger = Logger(label: "appd")

        // 2. The bus, with its gate chain fixed from here on (plugins contribute gates later).
        let bus = EventBus(gates: [], logger: Logger(label: "appd.bus"))

        // 3. Services, stopped in reverse order on SIGTERM/SIGINT.
        let services: [any Service] = [BusHeartbeat(bus: bus)]
        let group = ServiceGroup(services: services, logger: logger)

        logger.notice("appd started", metadata: ["version": Version.current])
        do {
            try await group.run()
        } catch {
            logger.critical("appd stopped after a failure", metadata: ["error": "\(error)"])
            return 1
        }
        logger.notice("appd stopped")
        return 0
    }
}

/// Keeps the daemon alive while nothing else runs, and drains the bus on the way out.
struct BusHeartbeat: Service {
    let bus: EventBus
    var name: String { "bus" }

    func run() async throws {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        try? await bus.drain(timeout: .seconds(5))
    }
}

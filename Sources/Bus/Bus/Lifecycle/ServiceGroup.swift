import CSystem
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs services until a shutdown signal or a service failure, then stops them in reverse
/// start order, each within `shutdownTimeout` before moving on.
public actor ServiceGroup {
    enum State { case idle, running, stopping, finished }

    private let services: [any Service]
    private let signals: [Int32]
    private let shutdownTimeout: Duration
    private let logger: Logger
    private let onShutdown: @Sendable () -> Void
    private var state = State.idle
    private var tasks: [Task<Void, any Error>] = []
    private var failure: ServiceFailed?
    private var wakeUp: CheckedContinuation<Void, Never>?
    private var signalSources: [any DispatchSourceRead] = []

    public init(
        services: [any Service], signals: [Int32] = [SIGTERM, SIGINT], shutdownTimeout: Duration = .seconds(10),
        logger: Logger, onShutdown: @escaping @Sendable () -> Void = {}
    ) {
        self.onShutdown = onShutdown
        self.services = services
        self.signals = signals
        self.shutdownTimeout = shutdownTimeout
        self.logger = logger
    }

    /// Starts every service and returns after all have stopped. Throws `ServiceFailed` when a
    /// service threw (the others are stopped first).
    public func run() async throws {
        guard state == .idle else { return }
        state = .running
        installSignalHandlers()
        for service in services {
            let name = service.name
            tasks.append(Task { [weak self] in
                do {
                    try await service.run()
                    await self?.serviceEnded(name, error: nil)
                } catch {
                    await self?.serviceEnded(name, error: error)
                    throw error
                }
            })
        }
        if state == .running {
            await withCheckedContinuation { wakeUp = $0 }
        }
        await stopAll()
        for source in signalSources { source.cancel() }
        state = .finished
        if let failure { throw failure }
    }

    /// Asks the group to stop (what SIGTERM does). Idempotent.
    public func triggerShutdown() {
        guard state == .running else { return }
        state = .stopping
        onShutdown()
        wakeUp?.resume()
        wakeUp = nil
    }

    private func serviceEnded(_ name: String, error: (any Error)?) {
        guard state == .running else { return }
        if let error, !(error is CancellationError) {
            logger.error("service failed; stopping the daemon", metadata: ["service": name, "error": "\(error)"])
            failure = ServiceFailed(service: name, underlying: error)
        } else {
            logger.notice("service finished; stopping the daemon", metadata: ["service": name])
        }
        triggerShutdown()
    }

    private func stopAll() async {
        for (service, task) in zip(services, tasks).reversed() {
            task.cancel()
            do {
                try await Deadline.run(
                    until: .now.advanced(by: shutdownTimeout), timeoutError: { StopTimeout() }
                ) { _ = await task.result }
            } catch {
                logger.warning("service did not stop in time; abandoning it", metadata: ["service": service.name, "error": "\(error)"])
            }
        }
    }

    private struct StopTimeout: Error {}

    /// The handler is installed synchronously (sigaction), before any service starts: a
    /// SIGTERM that arrives the instant the socket serves is recorded and acted on, never lost
    /// in a window where it was ignored but not yet watched (a dispatch signal source arms
    /// asynchronously). A read source on the signal's eventfd delivers it.
    private func installSignalHandlers() {
        for number in signals {
            let fd = appd_signal_catch(number)
            guard fd >= 0 else {
                logger.error("cannot catch a shutdown signal; stop appd with io.appd.Daemon.Shutdown", metadata: ["signal": "\(number)", "errno": "\(errno)"])
                continue
            }
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .global())
            source.setEventHandler { [weak self] in
                guard appd_signal_drain(fd) > 0, let self else { return }
                Task { await self.signalled(number) }
            }
            source.resume()
            signalSources.append(source)
        }
    }

    private func signalled(_ number: Int32) {
        logger.notice("signal received; shutting down", metadata: ["signal": "\(number)"])
        triggerShutdown()
    }
}

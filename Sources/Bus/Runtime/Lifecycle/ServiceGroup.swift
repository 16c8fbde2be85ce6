// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs services until a shutdown signal or a service failure, then stops them in reverse
/// start order, in swift-service-lifecycle's shape:
///
/// 1. **graceful**: the service's `ShutdownSignal` is triggered (it stops taking work, drains
///    and returns); it has `gracefulTimeout` to do so;
/// 2. **cancellation**: a service still running is cancelled;
/// 3. **waiting**: the group does not move on, and `run` does not return, while the service
///    still runs (it logs every `gracefulTimeout` which one it is waiting for), so nothing the
///    service uses (the database) is closed under it.
public actor ServiceGroup {
    public enum State: Sendable, Equatable { case idle, running, shuttingDown, finished }

    private let services: [any Service]
    private let signals: [Int32]
    private let gracefulTimeout: Duration
    private let logger: Logger
    private let onShutdown: @Sendable () -> Void
    public private(set) var state = State.idle
    private var running: [(service: any Service, shutdown: ShutdownSignal, task: Task<Void, any Error>)] = []
    private var failure: ServiceFailed?
    /// Shutdown was asked for before `run`: it then starts nothing.
    private var shutdownBeforeRun = false
    private var wakeUp: CheckedContinuation<Void, Never>?
    private var signalWatches: [SignalWatch] = []

    public init(
        services: [any Service], signals: [Int32] = [SIGTERM, SIGINT], gracefulTimeout: Duration = .seconds(10),
        logger: Logger, onShutdown: @escaping @Sendable () -> Void = {}
    ) {
        self.onShutdown = onShutdown
        self.services = services
        self.signals = signals
        self.gracefulTimeout = gracefulTimeout
        self.logger = logger
    }

    /// Starts every service and returns after all have stopped. Throws `ServiceFailed` when a
    /// service threw (the others are stopped first), `ServiceGroupError` when run twice.
    public func run() async throws {
        guard state == .idle else { throw ServiceGroupError(state: state) }
        if shutdownBeforeRun {
            state = .finished
            return
        }
        state = .running
        installSignalHandlers()
        for service in services {
            let name = service.name
            let shutdown = ShutdownSignal()
            let task = Task { [weak self] in
                do {
                    try await ShutdownSignal.$current.withValue(shutdown) { try await service.run() }
                    await self?.serviceEnded(name, error: nil)
                } catch {
                    await self?.serviceEnded(name, error: error)
                    throw error
                }
            }
            running.append((service, shutdown, task))
        }
        if state == .running {
            await withCheckedContinuation { wakeUp = $0 }
        }
        await stopAll()
        for watch in signalWatches { watch.cancel() }
        state = .finished
        if let failure { throw failure }
    }

    /// Asks the group to stop (what SIGTERM does). Idempotent; before `run`, `run` then
    /// returns at once.
    public func triggerShutdown() {
        if state == .idle { shutdownBeforeRun = true }
        guard state == .running else { return }
        state = .shuttingDown
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

    /// Stops each service in reverse start order: graceful first, then cancelled, then waited for.
    private func stopAll() async {
        for (service, shutdown, task) in running.reversed() {
            shutdown.trigger()
            if await finished(task, within: gracefulTimeout) { continue }
            logger.warning("service did not finish gracefully in time; cancelling it", metadata: ["service": service.name, "timeout": "\(gracefulTimeout)"])
            task.cancel()
            while await !finished(task, within: gracefulTimeout) {
                logger.error("still waiting for a cancelled service to stop", metadata: ["service": service.name])
            }
        }
    }

    /// Whether `task` ended within `limit` (the task itself is not touched).
    private nonisolated func finished(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
        do {
            try await withTimeout(limit, timeoutError: { CancellationError() }) { _ = await task.result }
            return true
        } catch {
            return false
        }
    }

    /// Caught from before any service starts (see `Signals`): a SIGTERM that arrives the
    /// instant the socket serves is acted on, never lost.
    private func installSignalHandlers() {
        for number in signals {
            do {
                signalWatches.append(try Signals.watch(number) { [weak self] in
                    guard let self else { return }
                    Task { await self.signalled(number) }
                })
            } catch {
                logger.error("cannot catch a shutdown signal; stop appd with io.appd.Daemon.Shutdown", metadata: ["signal": "\(number)", "error": "\(error)"])
            }
        }
    }

    private func signalled(_ number: Int32) {
        logger.notice("signal received; shutting down", metadata: ["signal": "\(number)"])
        triggerShutdown()
    }
}

/// A `ServiceGroup` runs once.
public struct ServiceGroupError: Error, CustomStringConvertible {
    public let state: ServiceGroup.State
    public var description: String { "this service group has already run (it is \(state)); make a new one" }
}

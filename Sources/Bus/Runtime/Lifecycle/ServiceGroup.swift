// SPDX-License-Identifier: Apache-2.0
import BusCore
import CSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs services until a shutdown signal or a service failure, then stops them in reverse
/// start order, in swift-service-lifecycle's shape: every service is a child task of one task
/// group (`run` returns only when all have ended), and what can end the running phase — a
/// service ending, a signal, `triggerShutdown` — arrives as one async sequence of events.
///
/// Stopping, service by service:
/// 1. **graceful**: the service's `ShutdownSignal` is triggered (it stops taking work, drains
///    and returns); it has `gracefulTimeout` to do so;
/// 2. **cancellation**: a service still running is cancelled (its child task only);
/// 3. **waiting**: the group does not move on, and `run` does not return, while the service
///    still runs (it logs every `gracefulTimeout` which one it is waiting for), so nothing the
///    service uses (the database) is closed under it.
public actor ServiceGroup {
    public enum State: Sendable, Equatable { case idle, running, shuttingDown, finished }

    /// What the running phase waits for.
    private enum Event: Sendable {
        case ended(index: Int, error: (any Error)?)
        case signal(Int32)
        case shutdown
    }

    private let services: [any Service]
    private let signals: [Int32]
    private let gracefulTimeout: Duration
    private let logger: Logger
    private let onShutdown: @Sendable () -> Void
    public private(set) var state = State.idle
    private var failure: ServiceFailed?
    /// Shutdown was asked for before `run`: it then starts nothing.
    private var shutdownBeforeRun = false
    private var events: AsyncStream<Event>.Continuation?

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
        let (stream, sink) = AsyncStream<Event>.makeStream()
        events = sink
        let signalWatches = watchSignals(into: sink)
        await runServices(stream, sink)
        for watch in signalWatches { watch.cancel() }
        sink.finish()
        events = nil
        state = .finished
        if let failure { throw failure }
    }

    /// The task group: every service a child; the running phase ends at the first event that
    /// stops the group, then each service is stopped in reverse start order.
    private nonisolated func runServices(_ stream: AsyncStream<Event>, _ sink: AsyncStream<Event>.Continuation) async {
        // Per service: asked to stop, told to stop now (cancelled), and ended.
        let graceful = services.map { _ in ShutdownSignal() }
        let cancelled = services.map { _ in ShutdownSignal() }
        let ended = services.map { _ in ShutdownSignal() }
        await withTaskGroup(of: Void.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask {
                    let error = await Self.run(service, graceful: graceful[index], cancelled: cancelled[index])
                    ended[index].trigger()
                    sink.yield(.ended(index: index, error: error))
                }
            }
            for await event in stream {
                if await !handle(event) { break }
            }
            for index in services.indices.reversed() {
                await stop(services[index].name, graceful: graceful[index], cancelled: cancelled[index], ended: ended[index])
            }
        }
    }

    /// Whether the group still runs after `event`.
    private func handle(_ event: Event) -> Bool {
        switch event {
        case .ended(let index, let error): serviceEnded(services[index].name, error: error)
        case .signal(let number): signalled(number)
        case .shutdown: break
        }
        return state == .running
    }

    /// Asks the group to stop (what SIGTERM does). Idempotent; before `run`, `run` then
    /// returns at once.
    public func triggerShutdown() {
        if state == .idle { shutdownBeforeRun = true }
        guard state == .running else { return }
        state = .shuttingDown
        onShutdown()
        events?.yield(.shutdown)
    }

    /// Runs one service under its graceful-shutdown signal until it returns, or until
    /// `cancelled` is triggered: then its task is cancelled and still waited for. Returns what
    /// it threw.
    private static func run(_ service: any Service, graceful: ShutdownSignal, cancelled: ShutdownSignal) async -> (any Error)? {
        await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask {
                do {
                    try await ShutdownSignal.$current.withValue(graceful) { try await service.run() }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                await cancelled.wait()
                return nil
            }
            // The first to end is the service (then the other waits no more) or the order to
            // cancel it (then the service's own end follows).
            var outcome: Result<Void, any Error>?
            while outcome == nil, let next = await group.next() {
                outcome = next
                group.cancelAll()
            }
            if case .failure(let error) = outcome { return error }
            return nil
        }
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

    /// Stops one service: graceful first, then cancelled, then waited for.
    private nonisolated func stop(_ name: String, graceful: ShutdownSignal, cancelled: ShutdownSignal, ended: ShutdownSignal) async {
        graceful.trigger()
        if await Self.triggered(ended, within: gracefulTimeout) { return }
        logger.warning("service did not finish gracefully in time; cancelling it", metadata: ["service": name, "timeout": "\(gracefulTimeout)"])
        cancelled.trigger()
        while await !Self.triggered(ended, within: gracefulTimeout) {
            logger.error("still waiting for a cancelled service to stop", metadata: ["service": name])
        }
    }

    /// Whether `signal` was triggered within `limit`. The wait itself is not cut short when the
    /// group's own task is cancelled: stopping must still wait for each service, not spin.
    private static func triggered(_ signal: ShutdownSignal, within limit: Duration) async -> Bool {
        // Unstructured: detached so that the caller's cancellation does not end the wait; awaited at once.
        await Task.detached { _ = try? await withTimeout(limit, timeoutError: { CancellationError() }) { await signal.wait() } }.value
        return signal.isTriggered
    }

    /// Caught from before any service starts (see `Signals`): a SIGTERM that arrives the
    /// instant the socket serves is acted on, never lost.
    private func watchSignals(into sink: AsyncStream<Event>.Continuation) -> [SignalWatch] {
        var watches: [SignalWatch] = []
        for number in signals {
            do {
                watches.append(try Signals.watch(number) { sink.yield(.signal(number)) })
            } catch {
                logger.error("cannot catch a shutdown signal; stop appd with io.appd.Daemon.Shutdown", metadata: ["signal": "\(number)", "error": "\(error)"])
            }
        }
        return watches
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

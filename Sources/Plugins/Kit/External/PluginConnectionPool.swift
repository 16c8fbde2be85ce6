#if canImport(Glibc)
import Glibc
#endif
import Bus
import Dispatch
import Synchronization

/// Calls into one external plugin: a few worker threads, each with its own blocking varlink
/// connection to the plugin's socket, take calls from a queue. A slow call holds one worker
/// until its deadline (then that connection is dropped and reopened); other calls use the
/// other workers, and nothing blocks appd's event loop or the cooperative pool.
final class PluginConnectionPool: Sendable {
    let plugin: String
    let socketPath: String
    private enum Queued: Sendable {
        case call(PluginCall)
        case stream(PluginStreamCall)
    }
    private let queue = Mutex<[Queued]>([])
    private let wakeup = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let active = Atomic<Int>(0)
    private let workers: Int

    init(plugin: String, socketPath: String, workers: Int) {
        self.plugin = plugin
        self.socketPath = socketPath
        self.workers = workers
        for _ in 0..<workers {
            let thread = OSThread.start(name: "plugin-calls") { [self] in work() }
            pthread_detach(thread)
        }
    }

    /// Calls in flight or queued.
    var inFlight: Int { active.load(ordering: .acquiring) }

    /// One call; a plugin's error reply is thrown as `PluginErrorReply`.
    func call(_ method: String, _ parameters: JSONValue, timeout: Duration) async throws -> JSONValue {
        guard !stopped.load(ordering: .acquiring) else { throw PluginUnavailable(plugin: plugin, reason: "it is stopping") }
        let call = PluginCall(method: method, parameters: parameters, deadline: ContinuousClock.now + timeout)
        active.add(1, ordering: .acquiringAndReleasing)
        defer { active.subtract(1, ordering: .acquiringAndReleasing) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                call.attach(continuation)
                queue.withLock { $0.append(.call(call)) }
                wakeup.signal()
            }
        } onCancel: {
            call.finish(.failure(CancellationError()))
        }
    }

    /// A call with `more`: `onReply` gets each intermediate reply (the worker waits for it to
    /// be taken, so a slow client slows the plugin down rather than filling memory); returns
    /// the last reply. `timeout` bounds each wait for the plugin's next reply.
    func stream(_ method: String, _ parameters: JSONValue, timeout: Duration, onReply: (JSONValue) async throws -> Void) async throws -> JSONValue {
        guard !stopped.load(ordering: .acquiring) else { throw PluginUnavailable(plugin: plugin, reason: "it is stopping") }
        let call = PluginStreamCall(method: method, parameters: parameters, timeout: timeout)
        active.add(1, ordering: .acquiringAndReleasing)
        defer { active.subtract(1, ordering: .acquiringAndReleasing) }
        queue.withLock { $0.append(.stream(call)) }
        wakeup.signal()
        do {
            while true {
                switch try await call.next() {
                case .reply(let reply): try await onReply(reply)
                case .last(let reply): return reply
                }
            }
        } catch {
            call.cancel()
            throw error
        }
    }

    /// Fails what is queued and lets the workers exit.
    func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let pending = queue.withLock { q in
            defer { q.removeAll() }
            return q
        }
        for queued in pending {
            switch queued {
            case .call(let call): call.finish(.failure(PluginUnavailable(plugin: plugin, reason: "it stopped")))
            case .stream(let call): call.finish(.failure(PluginUnavailable(plugin: plugin, reason: "it stopped")))
            }
        }
        for _ in 0..<workers { wakeup.signal() }
    }

    private func work() {
        var client: VarlinkClient?
        while true {
            wakeup.wait()
            if stopped.load(ordering: .acquiring) { return }
            guard let queued = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            let call: PluginCall
            switch queued {
            case .call(let single): call = single
            case .stream(let stream):
                if !serve(stream, &client) { client = nil }
                continue
            }
            guard !call.isFinished else { continue }
            let remaining = call.deadline - ContinuousClock.now
            guard remaining > .zero else {
                call.finish(.failure(DeadlineExceeded(method: call.method)))
                continue
            }
            do throws(VarlinkClientError) {
                if client == nil { client = try VarlinkClient(path: socketPath, timeout: remaining) }
                guard let connection = client else { continue }
                connection.timeout = remaining
                let reply = try connection.call(call.method, call.parameters)
                if let error = reply.error {
                    call.finish(.failure(PluginErrorReply(name: error, parameters: reply.parameters)))
                } else {
                    call.finish(.success(reply.parameters))
                }
            } catch {
                // The connection's state is unknown now (a late reply may still come): drop it.
                client = nil
                switch error {
                case .timedOut: call.finish(.failure(DeadlineExceeded(method: call.method)))
                default: call.finish(.failure(PluginUnavailable(plugin: plugin, reason: "\(error)")))
                }
            }
        }
    }
}

extension PluginConnectionPool {
    /// Runs one streaming call on this worker's connection; false when the connection must be
    /// dropped (its state is unknown: a timeout, an error, or a consumer that went away).
    fileprivate func serve(_ call: PluginStreamCall, _ client: inout VarlinkClient?) -> Bool {
        guard !call.isCancelled else { return true }
        do throws(VarlinkClientError) {
            if client == nil { client = try VarlinkClient(path: socketPath, timeout: call.timeout) }
            guard let connection = client else { return false }
            connection.timeout = call.timeout
            try connection.send(VarlinkCall(method: call.method, parameters: call.parameters, more: true))
            while true {
                let reply = try connection.receive()
                if let error = reply.error {
                    call.finish(.failure(PluginErrorReply(name: error, parameters: reply.parameters)))
                    return true
                }
                guard reply.continues else {
                    call.finish(.success(reply.parameters))
                    return true
                }
                // Waits until the client took it; a client that left cancels the plugin's stream.
                guard call.push(reply.parameters) else { return false }
            }
        } catch {
            switch error {
            case .timedOut: call.finish(.failure(DeadlineExceeded(method: call.method)))
            default: call.finish(.failure(PluginUnavailable(plugin: plugin, reason: "\(error)")))
            }
            return false
        }
    }
}

/// A streaming call: the worker thread pushes replies one at a time and waits for each to be
/// taken; the async side takes them in order, then the last reply or the error.
final class PluginStreamCall: Sendable {
    enum Next: Sendable {
        case reply(JSONValue)
        case last(JSONValue)
    }
    let method: String
    let parameters: JSONValue
    let timeout: Duration
    private struct State {
        var pending: JSONValue?
        var result: Result<JSONValue, any Error>?
        var cancelled = false
        var consumer: CheckedContinuation<Next, any Error>?
    }
    private let state = Mutex(State())
    private let taken = DispatchSemaphore(value: 0)

    init(method: String, parameters: JSONValue, timeout: Duration) {
        self.method = method
        self.parameters = parameters
        self.timeout = timeout
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Worker side: hands over one reply and waits until it is taken. False if cancelled.
    func push(_ reply: JSONValue) -> Bool {
        let consumer = state.withLock { s -> CheckedContinuation<Next, any Error>?? in
            guard !s.cancelled else { return nil }
            if let consumer = s.consumer {
                s.consumer = nil
                return .some(consumer)
            }
            s.pending = reply
            return .some(nil)
        }
        guard let consumer else { return false }
        if let consumer {
            // The consumer was waiting: it has it now.
            consumer.resume(returning: .reply(reply))
            return true
        }
        // Held until the consumer's next call takes it: at most one reply is buffered.
        taken.wait()
        return !isCancelled
    }

    func finish(_ result: Result<JSONValue, any Error>) {
        let consumer = state.withLock { s -> CheckedContinuation<Next, any Error>? in
            guard s.result == nil else { return nil }
            s.result = result
            defer { s.consumer = nil }
            return s.consumer
        }
        consumer?.resume(with: result.map { .last($0) })
    }

    func cancel() {
        let consumer = state.withLock { s -> CheckedContinuation<Next, any Error>? in
            s.cancelled = true
            defer { s.consumer = nil }
            return s.consumer
        }
        taken.signal()
        consumer?.resume(throwing: CancellationError())
    }

    /// Async side: the next reply, or the last one (or the error).
    func next() async throws -> Next {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Next, any Error>) in
                let ready = state.withLock { s -> Result<Next, any Error>? in
                    if s.cancelled { return .failure(CancellationError()) }
                    if let pending = s.pending {
                        s.pending = nil
                        return .success(.reply(pending))
                    }
                    if let result = s.result { return result.map { .last($0) } }
                    s.consumer = continuation
                    return nil
                }
                if let ready {
                    if case .success(.reply) = ready { taken.signal() }  // releases the waiting worker
                    continuation.resume(with: ready)
                }
            }
        } onCancel: {
            cancel()
        }
    }
}

/// One queued call and the continuation waiting for it (resumed exactly once).
final class PluginCall: Sendable {
    let method: String
    let parameters: JSONValue
    let deadline: ContinuousClock.Instant
    private struct State {
        var continuation: CheckedContinuation<JSONValue, any Error>?
        var result: Result<JSONValue, any Error>?
    }
    private let state = Mutex(State())

    init(method: String, parameters: JSONValue, deadline: ContinuousClock.Instant) {
        self.method = method
        self.parameters = parameters
        self.deadline = deadline
    }

    var isFinished: Bool { state.withLock { $0.result != nil } }

    func attach(_ continuation: CheckedContinuation<JSONValue, any Error>) {
        let done = state.withLock { s -> Result<JSONValue, any Error>? in
            if let result = s.result { return result }
            s.continuation = continuation
            return nil
        }
        if let done { continuation.resume(with: done) }
    }

    func finish(_ result: Result<JSONValue, any Error>) {
        let continuation = state.withLock { s -> CheckedContinuation<JSONValue, any Error>? in
            guard s.result == nil else { return nil }
            s.result = result
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume(with: result)
    }
}

/// A call to an external plugin that is down or stopping fails fast with this.
public struct PluginUnavailable: WireError, Equatable {
    public let plugin: String
    public let reason: String
    public init(plugin: String, reason: String) {
        self.plugin = plugin
        self.reason = reason
    }
    public var wireName: String { "io.appd.Daemon.PluginUnavailable" }
    public var wireParameters: [String: JSONValue] { ["plugin": .string(plugin), "reason": .string(reason)] }
    public var description: String { "plugin '\(plugin)' is unavailable: \(reason); see 'appctl plugins'" }
}

/// A plugin's own error reply, passed on to the client as it was.
struct PluginErrorReply: WireError {
    let name: String
    let parameters: JSONValue
    var wireName: String { name }
    var wireParameters: [String: JSONValue] { parameters.objectValue ?? [:] }
    var description: String { "\(name) \(parameters)" }
}

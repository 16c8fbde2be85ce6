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
    private let queue = Mutex<[PluginCall]>([])
    private let wakeup = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let active = Atomic<Int>(0)
    private let workers: Int

    init(plugin: String, socketPath: String, workers: Int) {
        self.plugin = plugin
        self.socketPath = socketPath
        self.workers = workers
        for _ in 0..<workers {
            let thread = OSThread.start { [self] in work() }
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
                queue.withLock { $0.append(call) }
                wakeup.signal()
            }
        } onCancel: {
            call.finish(.failure(CancellationError()))
        }
    }

    /// Fails what is queued and lets the workers exit.
    func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let pending = queue.withLock { q in
            defer { q.removeAll() }
            return q
        }
        for call in pending { call.finish(.failure(PluginUnavailable(plugin: plugin, reason: "it stopped"))) }
        for _ in 0..<workers { wakeup.signal() }
    }

    private func work() {
        var client: VarlinkClient?
        while true {
            wakeup.wait()
            if stopped.load(ordering: .acquiring) { return }
            guard let call = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }), !call.isFinished else { continue }
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

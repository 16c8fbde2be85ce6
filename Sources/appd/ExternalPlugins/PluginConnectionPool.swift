// SPDX-License-Identifier: Apache-2.0
import Contracts
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Synchronization

/// Calls into one external plugin over blocking varlink connections to its socket, run on a
/// `BlockingPool` of its own (`maxConcurrentCalls` threads): a slow call holds one thread
/// until its deadline (then its connection is dropped and a new one opened next time); other
/// calls use the other threads, and nothing blocks appd's event loop or the cooperative pool.
/// Idle connections are kept for the next call.
final class PluginConnectionPool: Sendable {
    let plugin: String
    let socketPath: String
    private let pool: BlockingPool
    private let idle = Mutex<[PluginConnection]>([])
    private let stopped = Atomic<Bool>(false)
    private let active = Atomic<Int>(0)

    init(plugin: String, socketPath: String, workers: Int) {
        self.plugin = plugin
        self.socketPath = socketPath
        self.pool = BlockingPool(name: "plugin-calls", threads: max(1, workers), queueLimit: max(64, workers * 16))
    }

    /// Calls in flight or queued.
    var inFlight: Int { active.load(ordering: .acquiring) }

    /// One call; a plugin's error reply is thrown as `PluginErrorReply`.
    func call(_ method: String, _ parameters: JSONValue, timeout: Duration) async throws -> JSONValue {
        guard !stopped.load(ordering: .acquiring) else { throw DaemonError.pluginUnavailable(plugin: plugin, reason: "it is stopping") }
        let deadline = ContinuousClock.now + timeout
        active.add(1, ordering: .acquiringAndReleasing)
        defer { active.subtract(1, ordering: .acquiringAndReleasing) }
        let reply = try await onPool(method) { [self] () throws -> VarlinkReply in
            // Time spent queued counts against the call's deadline.
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw DeadlineExceeded(method: method) }
            let connection = try take(timeout: remaining)
            let reply = try connection.exchange(remaining, method: method) { (client) throws(VarlinkClientError) in try client.call(method, parameters) }
            give(connection)
            return reply
        }
        if let error = reply.error { throw PluginErrorReply(name: error, parameters: reply.parameters) }
        return reply.parameters
    }

    /// A call with `more`: `onReply` gets each intermediate reply, and the next is read only
    /// after it returns (a slow client slows the plugin down rather than filling memory);
    /// returns the last reply. `timeout` bounds each wait for the plugin's next reply.
    func stream(_ method: String, _ parameters: JSONValue, timeout: Duration, onReply: (JSONValue) async throws -> Void) async throws -> JSONValue {
        guard !stopped.load(ordering: .acquiring) else { throw DaemonError.pluginUnavailable(plugin: plugin, reason: "it is stopping") }
        active.add(1, ordering: .acquiringAndReleasing)
        defer { active.subtract(1, ordering: .acquiringAndReleasing) }
        let connection = try await onPool(method) { [self] () throws -> PluginConnection in
            let connection = try take(timeout: timeout)
            try connection.exchange(timeout, method: method) { (client) throws(VarlinkClientError) in
                try client.send(VarlinkCall(method: method, parameters: parameters, more: true))
            }
            return connection
        }
        // The connection goes back to the idle list only after a clean end of the stream;
        // anything else (an error, a timeout, a client that went away) leaves its state unknown.
        var clean = false
        defer { if clean { give(connection) } else { connection.drop() } }
        while true {
            let reply = try await onPool(method) { try connection.exchange(timeout, method: method) { (client) throws(VarlinkClientError) in try client.receive() } }
            if let error = reply.error {
                clean = true
                throw PluginErrorReply(name: error, parameters: reply.parameters)
            }
            guard reply.continues else {
                clean = true
                return reply.parameters
            }
            try await onReply(reply.parameters)
        }
    }

    /// Refuses new calls and lets the pool's threads exit once the calls in flight are done.
    func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for connection in idle.withLock({ list in
            defer { list.removeAll() }; return list
        }) { connection.drop() }
        // Not waited for: a call still blocked ends at its own deadline, then its thread exits.
        pool.close()
    }

    /// Runs `body` on the pool; a refused job becomes the plugin's `Busy` or `PluginUnavailable`.
    private func onPool<T: Sendable>(_ method: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await pool.run(body)
        } catch PoolRefusal.closed {
            throw DaemonError.pluginUnavailable(plugin: plugin, reason: "it stopped")
        }
    }

    private func take(timeout: Duration) throws -> PluginConnection {
        if let connection = idle.withLock({ $0.popLast() }) { return connection }
        do throws(VarlinkClientError) {
            return PluginConnection(try VarlinkClient(path: socketPath, timeout: timeout), plugin: plugin)
        } catch {
            throw DaemonError.pluginUnavailable(plugin: plugin, reason: "\(error)")
        }
    }

    private func give(_ connection: PluginConnection) {
        guard !stopped.load(ordering: .acquiring) else { return connection.drop() }
        idle.withLock { $0.append(connection) }
    }
}

/// One blocking connection to a plugin, used by one pool job at a time.
final class PluginConnection: @unchecked Sendable {  // safe: a connection is either idle in the list or held by exactly one job
    private let client: VarlinkClient
    private let plugin: String

    init(_ client: VarlinkClient, plugin: String) {
        self.client = client
        self.plugin = plugin
    }

    /// Runs `body` with the reply timeout set; client errors become typed plugin errors (a
    /// timeout is `DeadlineExceeded`).
    func exchange<T>(_ timeout: Duration, method: String, _ body: (VarlinkClient) throws(VarlinkClientError) -> T) throws -> T {
        client.timeout = timeout
        do throws(VarlinkClientError) {
            return try body(client)
        } catch {
            drop()
            switch error {
            case .timedOut: throw DeadlineExceeded(method: method)
            default: throw DaemonError.pluginUnavailable(plugin: plugin, reason: "\(error)")
            }
        }
    }

    /// Ends the connection: a job blocked reading on it returns at once; the fd closes with
    /// the last reference.
    func drop() { shutdown(client.fileDescriptor, Int32(SHUT_RDWR)) }
}

/// A plugin's own error reply, passed on to the client as it was.
struct PluginErrorReply: WireError {
    let name: String
    let parameters: JSONValue
    var wireName: String { name }
    var wireParameters: [String: JSONValue] { parameters.objectValue ?? [:] }
    var description: String { "\(name) \(parameters)" }
}

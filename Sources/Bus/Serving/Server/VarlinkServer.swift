// SPDX-License-Identifier: Apache-2.0
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The varlink server on a Unix socket: one `EventLoop` accepts, reads and writes, and answers
/// calls whose handlers never wait; a worker task per connection, on that loop, answers the
/// others in order through the dispatcher. A connection has a worker only while it makes such
/// calls: one starts with the first, and ends after `idleWorkerRetirement` without one.
public final class VarlinkServer: Service {
    public var name: String { "varlink" }

    let dispatcher: VarlinkDispatcher
    let limits: ServerLimits
    let logger: Logger
    let listener: ListeningSocket
    let registry = Mutex(Registry())
    /// Accepts, reads and writes every connection; connection workers run on it too.
    let loop: EventLoop
    let stopping = Atomic<Bool>(false)
    private let acceptedTotal = Atomic<Int>(0)
    private let refusedTotal = Atomic<Int>(0)
    /// Streams that got a fresh worker (`serve`): what tests check the hand-over by.
    let handOvers = Atomic<Int>(0)
    /// Workers retired after waiting `idleWorkerRetirement` (`sweep`).
    let retiredWorkers = Atomic<Int>(0)
    /// Workers left in a call past its deadline (`abandon`).
    let abandonedWorkers = Atomic<Int>(0)
    /// Which plugin a peer on the control socket is, by its process (`bindPluginPeers`).
    private let pluginPeers = Mutex<(@Sendable (PeerCredentials) -> PluginScope?)?>(nil)

    /// Whose connection budget a connection counts against: its peer uid's on the control
    /// socket, its plugin's on a plugin's own socket.
    enum Budget: Hashable {
        case uid(UInt32)
        case plugin(String)
    }

    struct Registry {
        var connections: [Int32: VarlinkConnection] = [:]
        /// Connections on the control socket (plugins' sockets have budgets of their own).
        var controlConnections = 0
        var perBudget: [Budget: Int] = [:]
        var nextID = 0
        var workers: [Int: Task<Void, Never>] = [:]
        /// Plugins' own sockets (`openDoor`), by fd.
        var doors: [Int32: ListeningSocket] = [:]
    }

    /// Counters for `status`.
    public struct Stats: Sendable, Codable, Hashable {
        public var connections: Int
        public var accepted: Int
        public var refused: Int
    }

    public init(listener: ListeningSocket, dispatcher: VarlinkDispatcher, limits: ServerLimits, logger: Logger) throws {
        self.listener = listener
        self.dispatcher = dispatcher
        self.limits = try limits.validated()
        self.logger = logger
        self.loop = try EventLoop(name: "appd-io")
    }

    public var stats: Stats {
        Stats(
            connections: registry.withLock { $0.connections.count }, accepted: acceptedTotal.load(ordering: .relaxed),
            refused: refusedTotal.load(ordering: .relaxed))
    }

    /// Serves until shut down (gracefully, or cancelled), then stops accepting, drains
    /// in-flight calls (bounded), closes every connection and removes the socket file.
    public func run() async throws {
        loop.add(listener.fd, events: EventLoop.readable) { [self] _, _ in acceptAll(from: listener, scope: nil) }
        loop.onTick { [self] now in sweep(now: now) }
        loop.start()
        logger.notice("listening", metadata: ["socket": listener.path])
        // Serves until asked to shut down (gracefully, or by cancellation).
        await gracefulShutdown()
        await stop()
        // The loop ends once no connection, no worker and no job is left to run on it.
        await loop.stop { [self] in registry.withLock { $0.connections.isEmpty && $0.workers.isEmpty } }
    }

    private func stop() async {
        // 1. Stop accepting: no new connections from here on.
        stopping.store(true, ordering: .releasing)
        loop.remove(listener.fd)
        listener.close()
        for door in registry.withLock({ r in
            defer { r.doors = [:] }; return Array(r.doors.values)
        }) {
            loop.remove(door.fd)
            door.close()
        }
        // 2. Drain: wait for calls being answered now, within the bound.
        await ConnectionTable<VarlinkConnection>.drain(until: .now.advanced(by: limits.drainTimeout)) { [self] in
            registry.withLock { r in r.connections.values.allSatisfy(\.isIdle) }
        }
        // 3. Close every connection; workers still running are cancelled.
        let (connections, workers) = registry.withLock { r in (Array(r.connections.values), Array(r.workers.values)) }
        for connection in connections { connection.channel.requestClose() }
        for worker in workers { worker.cancel() }
        loop.wakeUp()
    }

    // MARK: On the I/O loop

    /// What the loop runs when a connection's fd is ready.
    private func ready(_ connection: VarlinkConnection, _ readiness: EventLoop.Readiness, _ scratch: inout [UInt8]) {
        if readiness.writable { connection.channel.flush() }
        if readiness.readable || readiness.hangup {
            let needsWorker = connection.readAvailable(into: &scratch, hangup: readiness.hangup) { call in
                // The method is looked up once, here; a call the loop cannot answer carries its
                // route to the worker.
                let route = dispatcher.route(call.method)
                let answered = dispatcher.answerNow(call, route: route, as: Self.caller(of: connection)) { reply in try? connection.send(reply) }
                return answered ? .answered : .queued(route)
            }
            if needsWorker { registry.withLock { $0.workers[connection.context.id] = worker(for: connection) } }
        }
        if readiness.hangup { connection.channel.requestClose() }
        if connection.channel.lifecycle == .closing { finishClosing(connection) }
    }

    /// Closes connections that asked to be closed or overstayed the first-message timeout, and
    /// retires workers that have waited `idleWorkerRetirement` for a call (their tasks end;
    /// forgotten here, on the loop, before `ready` can start the next one).
    private func sweep(now: ContinuousClock.Instant) {
        let all = registry.withLock { Array($0.connections.values) }
        for connection in all {
            if connection.shouldClose(now: now) {
                finishClosing(connection)
            } else if connection.retireIdleWorker(now: now) {
                _ = registry.withLock { $0.workers.removeValue(forKey: connection.context.id) }
                retiredWorkers.add(1, ordering: .relaxed)
            }
        }
    }

    /// Closes the fd and frees the connection's slot at once, so a client that reconnects
    /// straight away is not refused by a limit still counting its old connection.
    private func finishClosing(_ connection: VarlinkConnection) {
        guard connection.close() else { return }
        connection.wakeWorker()
        registry.withLock { r in
            r.connections[connection.fd] = nil
            if let budget = Self.budget(connection.context) {
                r.perBudget[budget, default: 1] -= 1
                if r.perBudget[budget] == 0 { r.perBudget[budget] = nil }
                if case .uid = budget { r.controlConnections -= 1 }
            }
            r.workers[connection.context.id]?.cancel()
        }
    }

    /// The budget a connection counted against when it was admitted.
    static func budget(_ context: ConnectionContext) -> Budget? {
        if let plugin = context.boundPlugin { return .plugin(plugin) }
        return context.peer.map { .uid($0.uid) }
    }

    /// Says which plugin (if any) a peer's process belongs to; a connection from one, on the
    /// control socket too, is held to that plugin's manifest and is never an admin.
    public func bindPluginPeers(_ classify: @escaping @Sendable (PeerCredentials) -> PluginScope?) {
        pluginPeers.withLock { $0 = classify }
    }

    /// Opens a socket of its own for one external plugin (mounted into its sandbox as appd's
    /// socket): every connection on it is that plugin's, held to its manifest from the first
    /// call and never an admin, whatever the peer's uid. `owner` (appd as root: the plugin's
    /// uid) gets the socket file; it is 0600 either way.
    public func openDoor(path: String, scope: PluginScope, owner: uid_t? = nil) throws(SocketError) -> Door {
        let socket = try ListeningSocket.bind(path: path, mode: 0o600)
        if let owner, chown(path, owner, owner) != 0 {
            let code = errno
            socket.close()
            throw SocketError(operation: "chown", path: path, code: code)
        }
        registry.withLock { $0.doors[socket.fd] = socket }
        loop.add(socket.fd, events: EventLoop.readable) { [self] _, _ in acceptAll(from: socket, scope: scope) }
        return Door(server: self, socket: socket)
    }

    /// A plugin's socket; `close()` stops accepting on it (its connections stay until they end).
    public final class Door: Sendable {
        let server: VarlinkServer
        let socket: ListeningSocket
        init(server: VarlinkServer, socket: ListeningSocket) {
            self.server = server
            self.socket = socket
        }
        public var path: String { socket.path }
        public func close() {
            let (server, socket) = (self.server, self.socket)
            guard server.registry.withLock({ $0.doors.removeValue(forKey: socket.fd) }) != nil else { return }
            // The path is free at once (a restarted plugin's new socket is bound there next;
            // with the old one still listening, that bind would see "another appd").
            socket.removePath()
            // On the loop, so no accept runs on a number that is being closed and reused.
            server.loop.execute {
                server.loop.remove(socket.fd)
                socket.close()
            }
        }
    }

    private func acceptAll(from listener: ListeningSocket, scope: PluginScope?) {
        ConnectionTable<VarlinkConnection>.acceptAll(listener.fd, logger: logger, while: { !stopping.load(ordering: .acquiring) }) { fd in
            var uid: UInt32 = 0, gid: UInt32 = 0, pid: Int32 = 0
            let peer: PeerCredentials? =
                appd_peer_credentials(fd, &uid, &gid, &pid) == 0 ? PeerCredentials(uid: uid, gid: gid, pid: pid) : nil
            guard let peer else {
                logger.warning("refusing connection: no peer credentials")
                Glibc.close(fd)
                return
            }
            // A plugin's process is that plugin's on whatever socket it came in on: it may run
            // as appd's uid, which would otherwise make it an admin here.
            let scope = scope ?? pluginPeers.withLock { $0 }?(peer)
            let budget: Budget = scope.map { .plugin($0.plugin) } ?? .uid(peer.uid)
            let admitted = registry.withLock { r -> Int? in
                switch budget {
                case .uid:
                    guard r.controlConnections < limits.maxConnections, r.perBudget[budget, default: 0] < limits.maxConnectionsPerUID else { return nil }
                    r.controlConnections += 1
                case .plugin:
                    guard r.perBudget[budget, default: 0] < limits.maxConnectionsPerPlugin else { return nil }
                }
                r.nextID += 1
                r.perBudget[budget, default: 0] += 1
                return r.nextID
            }
            guard let id = admitted else {
                refusedTotal.add(1, ordering: .relaxed)
                logger.warning(
                    "refusing connection: connection limit reached",
                    metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)"])
                Glibc.close(fd)
                return
            }
            acceptedTotal.add(1, ordering: .relaxed)
            let channel = SocketChannel(fd: fd, loop: loop, highWater: limits.streamHighWater, lowWater: limits.streamLowWater)
            let connection = VarlinkConnection(
                channel: channel, context: ConnectionContext(id: id, peer: peer, plugin: scope), limits: limits, logger: logger)
            // No worker yet: the first call the loop does not answer itself starts one (`ready`).
            registry.withLock { r in r.connections[fd] = connection }
            channel.register { [self] readiness, scratch in
                ready(connection, readiness, &scratch)
            }
        }
    }

    /// Who a call on `connection` comes from.
    static func caller(of connection: VarlinkConnection) -> Caller {
        Caller(peer: connection.context.peer, sessionToken: connection.context.sessionToken, connection: connection.context)
    }

    /// A new worker for `connection` (the registry keeps it: call under its lock). It runs on
    /// this I/O thread (see EventLoopExecutor); deadline tasks too.
    private func worker(for connection: VarlinkConnection) -> Task<Void, Never> {
        // Unstructured: a connection's worker lives as long as the connection; the registry keeps it and cancels it at close or shutdown.
        Task(executorPreference: loop.executor) { [self] in
            var handedOn = false
            await Deadline.on(loop) {
                handedOn = await serve(connection)
            }
            if !handedOn { _ = registry.withLock { $0.workers.removeValue(forKey: connection.context.id) } }
        }
    }

    /// The worker: answers the connection's calls one at a time, in order. True when it handed
    /// the connection over to a new worker instead, or was retired (the sweep forgot it; the
    /// next call starts a new one).
    ///
    /// A task keeps the memory of its deepest moment until it ends (its allocator reuses, never
    /// frees, its slabs: a few KB for a call through the gates and a handler). A worker that
    /// has answered a call holds that much, which is fine while the connection makes calls,
    /// but a stream can stay open for hours: it gets a fresh worker, which answers it (and
    /// what follows) from shallow frames. A task per stream, not per call.
    private func serve(_ connection: VarlinkConnection) async -> Bool {
        var answered = false
        loop: while true {
            switch await connection.nextCall() {
            case .call(let call, let resolved):
                if call.more, answered {
                    connection.putBack(call, route: resolved)
                    handOver(connection)
                    return true
                }
                // A route resolved before a plugin came or went is resolved again.
                let route = resolved.flatMap { dispatcher.isCurrent($0) ? $0 : nil }
                switch await Self.answer(call, route: route, on: connection, server: self) {
                case .answered: answered = true
                // The connection is gone (closed, or its client stopped reading): stop serving it.
                case .gone: break loop
                // Past its deadline: another worker serves the connection now (`abandon`).
                case .abandoned: return true
                }
            case .retired:
                return true
            case .done:
                break loop
            }
        }
        connection.workerFinished()
        return false
    }

    /// Replaces the current worker of `connection` with a new one. A close or a shutdown that
    /// cancelled the current worker meanwhile cancels the new one.
    @inline(never)
    private func handOver(_ connection: VarlinkConnection) {
        let next = registry.withLock { r in
            let next = worker(for: connection)
            r.workers[connection.context.id] = next
            return next
        }
        if Task.isCancelled { next.cancel() }
        handOvers.add(1, ordering: .relaxed)
    }

    enum Answered { case answered, gone, abandoned }

    /// One call, answered (`gone` when the connection is). A function of its own, kept out
    /// of `serve`: an idle connection's worker holds only `serve`'s async frame while it waits,
    /// and a call's locals in it cost every idle connection ~1 KB (measured: 3.4 -> 4.4 KB).
    ///
    /// A plain call runs right here, in the worker, under a deadline the server keeps
    /// (`KeptDeadline`), not in a race task of its own: at the deadline the loop answers the
    /// client DeadlineExceeded and hands the connection to a new worker (`abandon`), and this
    /// one, cancelled, ends with the call (`abandoned`) without touching the connection again;
    /// its reply, if any, is dropped, and a write it had not claimed is rolled back.
    @inline(never)
    static func answer(_ call: VarlinkCall, route: VarlinkRoute?, on connection: VarlinkConnection, server: VarlinkServer) async -> Answered {
        // Two functions, not one: an async function's context has room for the locals of every
        // path through it, and a stream holds the context of its path for as long as it is open.
        if call.more { return await answerStream(call, route: route, on: connection, server: server) }
        return await answerPlain(call, route: route, on: connection, server: server)
    }

    @inline(never)
    private static func answerStream(_ call: VarlinkCall, route: VarlinkRoute?, on connection: VarlinkConnection, server: VarlinkServer) async -> Answered {
        let streamBytes: @Sendable (JSONValue, [UInt8]) -> Bool = { connection.sendContinuing(parameters: $1) }
        let streamReplies: @Sendable (VarlinkReply) async throws -> Void = { try await connection.sendStreaming($0) }
        do {
            try await server.dispatcher.handle(
                call, route: route, as: caller(of: connection), timeout: server.limits.callTimeout, streamBytes: streamBytes, streamReplies: streamReplies,
                encodedReplies: true
            ) { reply in
                if reply.continues { try await connection.sendStreaming(reply) } else { try connection.send(reply) }
            }
            return .answered
        } catch {
            return .gone
        }
    }

    @inline(never)
    private static func answerPlain(_ call: VarlinkCall, route: VarlinkRoute?, on connection: VarlinkConnection, server: VarlinkServer) async -> Answered {
        let (dispatcher, limits) = (server.dispatcher, server.limits)
        let caller = caller(of: connection)
        let kept = KeptDeadline(method: call.method, deadline: .now.advanced(by: limits.callTimeout))
        let alarm = Alarm(at: kept.deadline) { [weak server] in
            guard kept.expire() else { return }
            if !call.oneway {
                let (name, parameters) = DeadlineExceeded(method: call.method).wire
                try? connection.send(VarlinkReply(parameters: .object(parameters), error: name))
            }
            server?.abandon(connection)
        }
        defer { alarm.cancel() }
        do {
            try await kept.keep {
                try await dispatcher.handle(call, route: route, as: caller, timeout: limits.callTimeout, encodedReplies: true) { reply in
                    // The reply answers the client unless the deadline did first.
                    guard kept.claim() else { return }
                    try connection.send(reply)
                }
            }
        } catch {
            return kept.expired ? .abandoned : .gone
        }
        return kept.expired ? .abandoned : .answered
    }

    /// A call on `connection` passed its deadline, and its client has been answered: its
    /// worker, still in the call, is cancelled and left to end on its own, and a new worker
    /// takes the calls after it (a worker answers one call at a time).
    private func abandon(_ connection: VarlinkConnection) {
        let stuck = registry.withLock { r in
            defer { r.workers[connection.context.id] = worker(for: connection) }
            return r.workers[connection.context.id]
        }
        stuck?.cancel()
        abandonedWorkers.add(1, ordering: .relaxed)
    }
}

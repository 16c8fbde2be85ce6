import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The varlink server on a Unix socket: one epoll thread accepts and reads, one worker task
/// per connection answers its calls in order through the dispatcher.
public final class VarlinkServer: Service {
    public var name: String { "varlink" }

    let dispatcher: VarlinkDispatcher
    let limits: ServerLimits
    let logger: Logger
    let listener: ListeningSocket
    let epollFD: Int32
    let wakeFD: Int32
    let registry = Mutex(Registry())
    let executor: EventLoopExecutor
    /// Call deadlines, fired by the I/O loop's sweep (within ~100 ms of when they fall due).
    let timers = DeadlineTimers()
    let stopping = Atomic<Bool>(false)
    private let acceptedTotal = Atomic<Int>(0)
    private let refusedTotal = Atomic<Int>(0)

    struct Registry {
        var connections: [Int32: VarlinkConnection] = [:]
        var perUID: [UInt32: Int] = [:]
        var nextID = 0
        var workers: [Int: Task<Void, Never>] = [:]
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
        self.epollFD = appd_epoll_create()
        self.wakeFD = appd_eventfd()
        guard epollFD >= 0, wakeFD >= 0 else { throw SocketError(operation: "epoll_create", path: listener.path, code: errno) }
        self.executor = EventLoopExecutor(wakeFD: wakeFD)
    }

    public var stats: Stats {
        Stats(
            connections: registry.withLock { $0.connections.count }, accepted: acceptedTotal.load(ordering: .relaxed),
            refused: refusedTotal.load(ordering: .relaxed))
    }

    /// Serves until cancelled, then stops accepting, drains in-flight calls (bounded), closes
    /// every connection and removes the socket file.
    public func run() async throws {
        appd_epoll_ctl(epollFD, Int32(APPD_EPOLL_ADD), listener.fd, UInt32(APPD_EPOLL_IN))
        appd_epoll_ctl(epollFD, Int32(APPD_EPOLL_ADD), wakeFD, UInt32(APPD_EPOLL_IN))
        let thread = OSThread.start(name: "appd-io") { [self] in loop() }
        logger.notice("listening", metadata: ["socket": listener.path])
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        await stop()
        appd_eventfd_signal(wakeFD)
        OSThread.join(thread)
        Glibc.close(epollFD)
        Glibc.close(wakeFD)
    }

    private func stop() async {
        // 1. Stop accepting: no new connections from here on.
        stopping.store(true, ordering: .releasing)
        appd_eventfd_signal(wakeFD)
        listener.close()
        // 2. Drain: wait for calls being answered now, within the bound.
        let deadline = ContinuousClock.now.advanced(by: limits.drainTimeout)
        while ContinuousClock.now < deadline {
            let busy = registry.withLock { r in r.connections.values.filter { !$0.isIdle }.count }
            if busy == 0 { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        // 3. Close every connection; workers still running are cancelled.
        let (connections, workers) = registry.withLock { r in (Array(r.connections.values), Array(r.workers.values)) }
        for connection in connections { connection.requestClose() }
        for worker in workers { worker.cancel() }
        appd_eventfd_signal(wakeFD)
    }

    // MARK: The I/O thread

    private func loop() {
        executor.bindToCurrentThread()
        var fds = [Int32](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        var scratch = [UInt8](repeating: 0, count: 65536)
        var lastSweep = ContinuousClock.now
        while true {
            executor.runQueuedJobs()
            let n = appd_epoll_wait(epollFD, &fds, &events, 256, executor.hasJobs ? 0 : 100)
            if n < 0 && errno != EINTR { logger.error("epoll_wait failed", metadata: ["errno": "\(errno)"]) }
            for i in 0..<max(0, Int(n)) {
                let fd = fds[i]
                if fd == wakeFD {
                    appd_eventfd_drain(wakeFD)
                } else if fd == listener.fd {
                    acceptAll()
                } else if let connection = registry.withLock({ $0.connections[fd] }) {
                    let flags = events[i]
                    if flags & UInt32(APPD_EPOLL_OUT) != 0 { connection.writable() }
                    if flags & UInt32(APPD_EPOLL_IN) != 0 { connection.readAvailable(into: &scratch) }
                    if flags & (UInt32(APPD_EPOLL_HUP) | UInt32(APPD_EPOLL_ERR)) != 0 {
                        connection.readAvailable(into: &scratch)
                        connection.requestClose()
                    }
                    if connection.isClosing { finishClosing(connection) }
                }
            }
            let now = ContinuousClock.now
            if now - lastSweep > .milliseconds(100) {
                sweep(now: now)
                timers.fireExpired(now: now)
                lastSweep = now
            }
            // Stop only when no connection, no worker and no job is left to run on this thread.
            if stopping.load(ordering: .acquiring) && !executor.hasJobs
                && registry.withLock({ $0.connections.isEmpty && $0.workers.isEmpty })
            {
                return
            }
        }
    }

    /// Closes connections that asked to be closed or overstayed the first-message timeout.
    private func sweep(now: ContinuousClock.Instant) {
        let all = registry.withLock { Array($0.connections.values) }
        for connection in all where connection.shouldClose(now: now) { finishClosing(connection) }
    }

    /// Closes the fd and frees the connection's slot at once, so a client that reconnects
    /// straight away is not refused by a limit still counting its old connection.
    private func finishClosing(_ connection: VarlinkConnection) {
        guard connection.close() else { return }
        connection.wakeWorker()
        registry.withLock { r in
            r.connections[connection.fd] = nil
            if let uid = connection.context.peer?.uid {
                r.perUID[uid, default: 1] -= 1
                if r.perUID[uid] == 0 { r.perUID[uid] = nil }
            }
            r.workers[connection.context.id]?.cancel()
        }
    }

    private func acceptAll() {
        while !stopping.load(ordering: .acquiring) {
            let fd = appd_accept(listener.fd)
            guard fd >= 0 else {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK {
                    logger.warning("accept failed", metadata: ["errno": "\(errno)"])
                }
                return
            }
            var uid: UInt32 = 0, gid: UInt32 = 0, pid: Int32 = 0
            let peer: PeerCredentials? =
                appd_peer_credentials(fd, &uid, &gid, &pid) == 0 ? PeerCredentials(uid: uid, gid: gid, pid: pid) : nil
            guard let peer else {
                logger.warning("refusing connection: no peer credentials")
                Glibc.close(fd)
                continue
            }
            let admitted = registry.withLock { r -> Int? in
                guard r.connections.count < limits.maxConnections else { return nil }
                guard r.perUID[peer.uid, default: 0] < limits.maxConnectionsPerUID else { return nil }
                r.nextID += 1
                r.perUID[peer.uid, default: 0] += 1
                return r.nextID
            }
            guard let id = admitted else {
                refusedTotal.add(1, ordering: .relaxed)
                logger.warning(
                    "refusing connection: connection limit reached",
                    metadata: ["peer.uid": "\(peer.uid)", "peer.pid": "\(peer.pid)"])
                Glibc.close(fd)
                continue
            }
            acceptedTotal.add(1, ordering: .relaxed)
            let connection = VarlinkConnection(
                fd: fd, epollFD: epollFD, context: ConnectionContext(id: id, peer: peer), limits: limits, logger: logger)
            // The worker runs on this I/O thread (see EventLoopExecutor); deadline tasks too.
            let worker = Task(executorPreference: executor) { [self] in
                await Deadline.$executor.withValue(executor) {
                    await Deadline.$timers.withValue(timers) {
                        await Self.serve(connection, dispatcher: dispatcher, limits: limits)
                    }
                }
                _ = registry.withLock { $0.workers.removeValue(forKey: id) }
            }
            registry.withLock { r in
                r.connections[fd] = connection
                r.workers[id] = worker
            }
            connection.register()
        }
    }

    /// The worker: answers the connection's calls one at a time, in order.
    static func serve(_ connection: VarlinkConnection, dispatcher: VarlinkDispatcher, limits: ServerLimits) async {
        while let call = await connection.nextCall() {
            let caller = Caller(
                peer: connection.context.peer, sessionToken: connection.context.sessionToken,
                connection: connection.context)
            do {
                try await dispatcher.handle(call, as: caller, timeout: limits.callTimeout) { reply in
                    if reply.continues { try await connection.sendStreaming(reply) } else { try connection.send(reply) }
                }
            } catch {
                // The connection is gone (closed, or its client stopped reading): stop serving it.
                break
            }
        }
        connection.workerFinished()
    }
}

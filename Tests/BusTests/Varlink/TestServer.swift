// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink
import CSystem
import Glibc
import Synchronization
import TestSupport

/// A real VarlinkServer on a real socket in a temporary directory, with a test interface.
final class TestServer: Sendable {
    static let idl = """
        # Methods for testing the server.
        interface io.appd.Test

        # Returns the text.
        method Echo(text: string) -> (text: string)
        # Streams 1...upTo, each as a reply.
        method Count(upTo: int) -> (n: int)
        # Always fails with a typed error.
        method Fail() -> ()
        # Sleeps, then replies.
        method Sleep(seconds: float) -> ()
        # Waits for the test's latch ignoring cancellation, then tries to commit (claims its deadline).
        method Stuck() -> (claimed: bool)
        # Returns a large string.
        method Big(bytes: int) -> (text: string)
        # Counts how often it was called (oneway tests).
        method Touch() -> (touches: int)
        # Never waits: returns the text, and whether it ran in a task (a worker's) or not (the loop's).
        method Quick(text: string) -> (text: string, inTask: bool)

        error Failed (reason: string)

        """

    struct Echo: Command {
        static let method = "io.appd.Test.Echo"
        typealias Reply = EchoReply
        var text: String
    }
    struct Count: StreamingCommand {
        static let method = "io.appd.Test.Count"
        typealias Reply = CountReply
        var upTo: Int
    }
    struct CountReply: Codable, Sendable { var n: Int }
    struct Fail: Command {
        static let method = "io.appd.Test.Fail"
        typealias Reply = Empty
    }
    struct Sleep: Command {
        static let method = "io.appd.Test.Sleep"
        typealias Reply = Empty
        var seconds: Double
    }
    struct Stuck: Command {
        static let method = "io.appd.Test.Stuck"
        typealias Reply = StuckReply
    }
    struct StuckReply: Codable, Sendable { var claimed: Bool }
    /// What `Stuck` waits for (`release`), and what it saw once it woke: whether it was
    /// cancelled, and whether its claim held.
    final class StuckOutcome: Sendable {
        let release = Latch()
        let seen = Mutex<(cancelled: Bool, claimed: Bool)?>(nil)
    }
    let stuck = StuckOutcome()
    struct Big: Command {
        static let method = "io.appd.Test.Big"
        typealias Reply = EchoReply
        var bytes: Int
    }
    struct Touch: Command {
        static let method = "io.appd.Test.Touch"
        typealias Reply = TouchReply
    }
    struct TouchReply: Codable, Sendable { var touches: Int }
    struct Quick: Command {
        static let method = "io.appd.Test.Quick"
        typealias Reply = QuickReply
        var text: String
    }
    struct QuickReply: Codable, Sendable, Equatable {
        var text: String
        var inTask: Bool
    }
    struct Failed: WireError {
        var wireName: String { "io.appd.Test.Failed" }
        var wireParameters: [String: JSONValue] { ["reason": "on purpose"] }
        var description: String { "failed on purpose" }
    }

    let directory: String
    let path: String
    let bus: EventBus
    let dispatcher: VarlinkDispatcher
    let server: VarlinkServer
    let touches = Counter()
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)

    init(limits: ServerLimits = ServerLimits(), logger: Logger = Logger(label: "test", level: .critical, handler: InMemoryLogHandler())) throws {
        var template = Array("/tmp/appd-test-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw SocketError(operation: "mkdtemp", path: "/tmp", code: errno) }
        directory = String(cString: dir)
        path = directory + "/appd.sock"
        bus = EventBus(gates: [AdminGate()], logger: logger)
        dispatcher = try VarlinkDispatcher(
            bus: bus, info: .init(vendor: "appd", product: "appd-test", version: "0", url: "https://example.org"), logger: logger)
        try BusInterface.install(on: dispatcher, events: bus, isAdmin: { _ in true })
        try dispatcher.register(try VarlinkInterface(parsing: Self.idl))
        let touches = self.touches
        try bus.register(Echo.self) { command, _ in EchoReply(text: command.text) }
        try bus.register(Count.self) { command, _, writer in
            guard command.upTo > 0 else { return CountReply(n: 0) }
            for n in 1..<command.upTo { try await writer.send(CountReply(n: n)) }
            return CountReply(n: command.upTo)
        }
        try bus.register(Fail.self) { _, _ in throw Failed() }
        try bus.register(Sleep.self) { command, _ in
            try await Task.sleep(for: .milliseconds(Int(command.seconds * 1000)))
            return Empty()
        }
        let stuck = self.stuck
        try bus.register(Stuck.self) { _, _ in
            await stuck.release.wait()
            let (cancelled, claimed) = (Task.isCancelled, Deadline.claim())
            stuck.seen.withLock { $0 = (cancelled, claimed) }
            return StuckReply(claimed: claimed)
        }
        try bus.register(Big.self) { command, _ in EchoReply(text: String(repeating: "x", count: command.bytes)) }
        try bus.register(Touch.self) { _, _ in TouchReply(touches: touches.increment()) }
        try bus.answer(Quick.self) { command, _ in
            guard command.text != "fail" else { throw Failed() }
            return QuickReply(text: command.text, inTask: withUnsafeCurrentTask { $0 != nil })
        }
        let listener = try ListeningSocket.bind(path: path, mode: 0o600)
        server = try VarlinkServer(listener: listener, dispatcher: dispatcher, limits: limits, logger: logger)
        let server = self.server
        task.withLock { $0 = Task { try await server.run() } }
    }

    func client(timeout: Duration = .seconds(10)) throws -> TestClient {
        TestClient(try VarlinkClient(path: path, timeout: timeout), timeout: timeout)
    }

    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        _ = await running?.result
        rmdir(directory)
    }
}

/// Counts this process's open file descriptors.
func openFileDescriptors() -> Int {
    guard let dir = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(dir) }
    var count = 0
    while readdir(dir) != nil { count += 1 }
    return count
}

/// Binds a socket at `path` and closes it without removing the file: what a killed daemon leaves.
func appd_listen_then_close(_ path: String) -> Bool {
    let fd = appd_unix_listen(path, 1)
    guard fd >= 0 else { return false }
    close(fd)
    return true
}

/// A counter shared with handlers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
    var current: Int { value.withLock { $0 } }
}

/// A VarlinkClient whose waits sleep instead of blocking, so tests never hold one of the
/// few cooperative threads while another suite needs it.
final class TestClient {
    let client: VarlinkClient
    let timeout: Duration

    init(_ client: VarlinkClient, timeout: Duration) {
        self.client = client
        self.timeout = timeout
    }

    /// Writes on a thread of its own: a write blocks while the server reads slowly (10,000
    /// pipelined calls), and two such waits would hold both cooperative threads of a 2-core
    /// machine, so the servers they wait for never run (seen: a swift test that hung).
    func send(_ call: VarlinkCall) throws(VarlinkClientError) { try client.send(call) }
    func write(_ bytes: [UInt8]) async throws {
        let client = UncheckedBox(self.client)
        _ = try await offPool { try client.value.write(bytes) }
    }
    func finishSending() { client.finishSending() }

    func receive() async throws -> VarlinkReply {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let reply = try client.nextBufferedReply() { return reply }
            if client.isReadable() {
                try client.fill()
                continue
            }
            guard ContinuousClock.now < deadline else { throw VarlinkClientError.timedOut(seconds: 10) }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    func call(_ method: String, _ parameters: JSONValue = [:]) async throws -> VarlinkReply {
        try client.send(VarlinkCall(method: method, parameters: parameters))
        return try await receive()
    }

    func stream(_ method: String, _ parameters: JSONValue = [:], onReply: (VarlinkReply) -> Void) async throws {
        try client.send(VarlinkCall(method: method, parameters: parameters, more: true))
        while true {
            let reply = try await receive()
            onReply(reply)
            if !reply.continues || reply.error != nil { return }
        }
    }
}

/// A value moved to another thread by a test that hands it over whole (it is not used here meanwhile).
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs blocking socket work on a thread of its own, never on a cooperative one.
func offPool<T>(_ work: @escaping () throws -> T) async throws -> T {
    let job = UncheckedBox(work)
    let done: UncheckedBox<T> = try await withCheckedThrowingContinuation { continuation in
        // A plain pthread (detached): Foundation's Thread would hold descriptors of its own,
        // which the tests that count this process's descriptors would see.
        pthread_detach(OSThread.start(name: "test-client") { continuation.resume(with: Result { UncheckedBox(try job.value()) }) })
    }
    return done.value
}

#if canImport(Glibc)
import Glibc
#endif
import Bus
import Synchronization

/// An example external plugin in Swift: a varlink server built with appd's Bus library, on the
/// socket appd hands it (fd 3, LISTEN_FDS). Install its folder (contrib/plugins/greeter) in a
/// plugin directory; `appctl greeter hello --name Ada` then calls it through appd's gates.
///
/// Flags for appd's own tests: `--exit-at-once` exits with status 3 before serving;
/// `--serve-interface NAME` serves the interface under another name than its manifest says.
@main
struct Greeter {
    static let idl = """
        # An example external plugin written in Swift with appd's Bus library.
        interface io.appd.examples.Greeter

        # Who is calling, as appd saw it. appd fills this in; clients cannot.
        type Caller (
          uid: int,
          userId: ?string,
          email: ?string,
          roles: []string
        )

        # Greets the signed-in caller and publishes greeter.greeted through appd.
        method Hello(name: ?string, caller: ?Caller) -> (greeting: string, userId: ?string, roles: []string)

        # Sleeps, to show the call timeout.
        method Slow(seconds: float) -> ()

        # How many greetings this process has given (its own state, reset by a restart).
        method Count() -> (count: int)

        # Tries to publish an event on appd's bus with the plugin's credential.
        method Publish(topic: string) -> (published: bool, reason: ?string)

        # Counts down from 'from' to 0, one reply 'everyMs' milliseconds apart (default 100).
        # Call with more.
        method Countdown(from: int, everyMs: ?int) -> (n: int)

        # The names of the environment variables this process got from appd, and the file
        # descriptors it had open when it started (what each points to).
        method Environment() -> (names: []string, descriptors: []string)

        error Failed (reason: string)

        """

    struct Caller: Codable, Sendable {
        var uid: Int
        var userId: String?
        var email: String?
        var roles: [String]
    }
    struct Hello: Command {
        static let method = "io.appd.examples.Greeter.Hello"
        struct Reply: Codable, Sendable {
            var greeting: String
            var userId: String?
            var roles: [String]
        }
        var name: String?
        var caller: Caller?
    }
    struct Slow: Command {
        static let method = "io.appd.examples.Greeter.Slow"
        typealias Reply = Empty
        var seconds: Double
    }
    struct Count: Command {
        static let method = "io.appd.examples.Greeter.Count"
        struct Reply: Codable, Sendable { var count: Int }
    }
    struct Countdown: StreamingCommand {
        static let method = "io.appd.examples.Greeter.Countdown"
        struct Reply: Codable, Sendable { var n: Int }
        var from: Int
        var everyMs: Int?
    }
    struct Environment: Command {
        static let method = "io.appd.examples.Greeter.Environment"
        struct Reply: Codable, Sendable {
            var names: [String]
            var descriptors: [String]
        }
    }
    struct Publish: Command {
        static let method = "io.appd.examples.Greeter.Publish"
        struct Reply: Codable, Sendable {
            var published: Bool
            var reason: String?
        }
        var topic: String
    }

    static func main() async {
        // What appd handed over, before this process opens anything of its own.
        let inherited = openDescriptors()
        let arguments = CommandLine.arguments
        if arguments.contains("--exit-at-once") { exit(3) }
        var idl = Self.idl
        if let i = arguments.firstIndex(of: "--serve-interface"), i + 1 < arguments.count {
            idl = idl.replacing("io.appd.examples.Greeter", with: arguments[i + 1])
        }
        LoggingSystem.bootstrap(level: .info) { _ in StreamLogHandler.standardError() }
        let logger = Logger(label: "greeter")
        guard let fd = Systemd.takeListeningSocket() else {
            logger.critical("no socket on fd 3: start me from appd (a plugin folder with plugin.json)")
            exit(2)
        }
        let counter = Counter()
        // The blocking client calls back into appd run here, off the event loop.
        let calls = BlockingPool(name: "greeter-calls", threads: 4, queueLimit: 64)
        do {
            let bus = EventBus(gates: [])
            let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "appd examples", product: "greeter", version: "1.0.0", url: "https://github.com/appd/appd"))
            try dispatcher.register(try VarlinkInterface(parsing: idl))
            try bus.register(Hello.self) { command, _ in
                let count = counter.increment()
                let who = command.name ?? command.caller?.email ?? "stranger"
                // Tell appd's bus, off the event loop (the client blocks).
                _ = try? await calls.run { publish(topic: "greeter.greeted", payload: ["name": .string(who), "count": .int(Int64(count))]) }
                return .init(greeting: "Hello, \(who)!", userId: command.caller?.userId, roles: command.caller?.roles ?? [])
            }
            try bus.register(Slow.self) { command, _ in
                try await Task.sleep(for: .milliseconds(Int64(command.seconds * 1000)))
                return Empty()
            }
            try bus.register(Count.self) { _, _ in .init(count: counter.value) }
            try bus.register(Countdown.self) { command, _, writer in
                guard command.from >= 0, command.from <= 1000 else { throw InvalidParameters(method: Countdown.method, parameter: "from", reason: "0 to 1000") }
                let every = command.everyMs ?? 100
                guard every >= 0, every <= 60_000 else { throw InvalidParameters(method: Countdown.method, parameter: "everyMs", reason: "0 to 60000") }
                var n = command.from
                while n > 0 {
                    try await writer.send(.init(n: n))
                    try await Task.sleep(for: .milliseconds(every))
                    n -= 1
                }
                return .init(n: 0)
            }
            try bus.register(Environment.self) { _, _ in
                var names: [String] = []
                var entry = environ
                while let pointer = entry.pointee {
                    names.append(String(String(cString: pointer).prefix { $0 != "=" }))
                    entry += 1
                }
                return .init(names: names.sorted(), descriptors: inherited)
            }
            try bus.register(Publish.self) { command, _ in
                let denied = try await calls.run { publish(topic: command.topic, payload: [:]) }
                return .init(published: denied == nil, reason: denied)
            }
            let server = try VarlinkServer(
                listener: .inherited(fd: fd, path: "fd:3"), dispatcher: dispatcher, limits: ServerLimits(), logger: logger)
            logger.notice("greeter serving")
            try await ServiceGroup(services: [server], logger: logger).run()
        } catch {
            logger.critical("greeter failed: \(error)")
            exit(1)
        }
    }

    /// Publishes through appd's socket with the plugin credential; nil, or why it failed.
    static func publish(topic: String, payload: JSONValue) -> String? {
        guard let socket = getenv("APPD_SOCKET").map({ String(cString: $0) }), let token = getenv("APPD_PLUGIN_TOKEN").map({ String(cString: $0) }) else {
            return "APPD_SOCKET or APPD_PLUGIN_TOKEN is not set"
        }
        do {
            let client = try VarlinkClient(path: socket, timeout: .seconds(5))
            let auth = try client.call("io.appd.Bus.AuthenticatePlugin", ["token": .string(token)])
            if let error = auth.error { return error }
            let reply = try client.call("io.appd.Bus.Publish", ["topic": .string(topic), "payload": payload])
            return reply.error.map { "\($0) \(reply.parameters)" }
        } catch {
            return "\(error)"
        }
    }
}

/// The greetings given by this process.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() -> Int { count.withLock { $0 += 1; return $0 } }
    var value: Int { count.withLock { $0 } }
}

/// "N -> target" for each open file descriptor, read from /proc/self/fd.
func openDescriptors() -> [String] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    defer { closedir(directory) }
    var found: [(Int32, String)] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let fd = Int32(name), fd != dirfd(directory) else { continue }
        var target = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
        found.append((fd, "\(fd) -> " + (n > 0 ? String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?")))
    }
    return found.sorted { $0.0 < $1.0 }.map(\.1)
}

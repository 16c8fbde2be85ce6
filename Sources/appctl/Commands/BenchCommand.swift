#if canImport(Glibc)
import Glibc
#endif
import Bus
import Synchronization

/// `appctl bench`: a load generator in the spirit of redis-benchmark.
enum BenchCommand {
    static let command = Builtin(
        name: "bench", abstract: "Measure calls per second and latency against the running daemon.",
        usage: "bench [-c <connections>] [-n <calls>] [-P <pipeline>] [--method <method>] [--params <json>]",
        discussion: "Each connection runs on its own thread and keeps -P calls in flight. Prints calls/s, p50 and p99 latency.",
        options: """
              -c <connections>        Concurrent connections (default: 1).
              -n <calls>              Calls in total (default: 100000).
              -P <pipeline>           Calls sent before reading replies, per connection (default: 1).
              --method <method>       Method to call (default: io.appd.Daemon.Ping).
              --params <json>         Parameters as a JSON object (default: {}).
            """,
        reserved: ["-c", "-n", "-P", "--method", "--params"]
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, valued: ["-c", "-n", "-P", "--method", "--params"], command: "bench")
        func count(_ flag: String, _ fallback: Int) throws(AppctlError) -> Int {
            guard let text = flags.value(flag) else { return fallback }
            guard let n = Int(text), n > 0 else { throw .usage("\(flag) needs a positive whole number", command: "bench") }
            return n
        }
        let connections = try count("-c", 1)
        let calls = try count("-n", 100_000)
        let pipeline = try count("-P", 1)
        let method = flags.value("--method") ?? "io.appd.Daemon.Ping"
        var parameters: JSONValue = [:]
        if let text = flags.value("--params") {
            guard let json = try? JSONParser.parse(Array(text.utf8)), json.objectValue != nil else {
                throw .usage("--params needs a JSON object", command: "bench")
            }
            parameters = json
        }
        let report = try run(
            path: context.options.socketPath, connections: connections, calls: calls, pipeline: pipeline,
            call: VarlinkCall(method: method, parameters: parameters), timeout: context.options.timeout)
        if context.options.json {
            print(report.json.jsonText)
        } else {
            print("\(method): \(report.calls) calls, \(connections) connection(s), pipeline \(pipeline)")
            print("  \(Int(report.callsPerSecond)) calls/s   p50 \(format(report.p50)) ms   p99 \(format(report.p99)) ms   errors \(report.errors)")
        }
        return report.errors == 0 ? ExitCode.ok : ExitCode.daemonError
    }

    struct Report {
        var calls: Int
        var errors: Int
        var seconds: Double
        var p50: Double
        var p99: Double
        var callsPerSecond: Double { Double(calls) / seconds }
        var json: JSONValue {
            [
                "calls": .int(Int64(calls)), "errors": .int(Int64(errors)), "seconds": .double(seconds),
                "callsPerSecond": .double(callsPerSecond.rounded()), "p50Ms": .double(p50), "p99Ms": .double(p99),
            ]
        }
    }

    static func format(_ ms: Double) -> String {
        let s = String((ms * 1000).rounded() / 1000)
        return s
    }

    final class Shared: Sendable {
        let latencies = Mutex<[Double]>([])
        let errors = Atomic<Int>(0)
        let failure = Mutex<VarlinkClientError?>(nil)
    }

    static func run(
        path: String, connections: Int, calls: Int, pipeline: Int, call: VarlinkCall, timeout: Duration
    ) throws(AppctlError) -> Report {
        let shared = Shared()
        // Connect everything first, so connecting is not measured.
        var clients: [VarlinkClient] = []
        for _ in 0..<connections {
            do throws(VarlinkClientError) { clients.append(try VarlinkClient(path: path, timeout: timeout)) } catch { throw .unreachable(error, socket: path) }
        }
        let frame = call.frame()
        let start = ContinuousClock.now
        var threads: [pthread_t] = []
        for (i, client) in clients.enumerated() {
            let share = calls / connections + (i < calls % connections ? 1 : 0)
            let box = ClientBox(client)
            threads.append(OSThread.start {
                let client = box.client
                var local: [Double] = []
                local.reserveCapacity(share)
                var done = 0
                do {
                    while done < share {
                        let batch = min(pipeline, share - done)
                        var bytes: [UInt8] = []
                        for _ in 0..<batch { bytes += frame }
                        let sent = ContinuousClock.now
                        try client.write(bytes)
                        for _ in 0..<batch {
                            let reply = try client.receive()
                            if reply.error != nil { shared.errors.add(1, ordering: .relaxed) }
                            let elapsed = ContinuousClock.now - sent
                            local.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
                        }
                        done += batch
                    }
                } catch let error as VarlinkClientError {
                    shared.failure.withLock { $0 = error }
                } catch {}
                shared.latencies.withLock { $0 += local }
            })
        }
        for thread in threads { OSThread.join(thread) }
        let elapsed = ContinuousClock.now - start
        if let failure = shared.failure.withLock({ $0 }) { throw .unreachable(failure, socket: path) }
        var latencies = shared.latencies.withLock { $0 }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        return Report(
            calls: latencies.count, errors: shared.errors.load(ordering: .relaxed),
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            p50: percentile(0.5), p99: percentile(0.99))
    }
}

/// Hands one client to the thread that alone uses it from then on.
final class ClientBox: @unchecked Sendable {  // safe: the client is handed over once and never shared
    let client: VarlinkClient
    init(_ client: VarlinkClient) { self.client = client }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts
import Varlink

/// `appctl bench`: a load generator in the spirit of redis-benchmark.
struct Bench: Leaf {
    static let path = ["bench"]
    static let abstract = "Measure calls per second and latency against the running daemon."
    static let discussion =
        "One thread drives all connections; each keeps -P calls in flight and carries the saved session (appctl login). Prints calls/s, p50 and p99 latency."
    @Option("-c", "connections", "Concurrent connections (default: 1).") var connectionsGiven: String?
    @Option("-n", "calls", "Calls in total (default: 100000).") var callsGiven: String?
    @Option("-P", "pipeline", "Calls sent before reading replies, per connection (default: 1).") var pipelineGiven: String?
    @Option("--method", "method", "Method to call (default: io.appd.Daemon.Ping).") var method: String?
    @Option("--params", "json", "Parameters as a JSON object (default: {}).") var params: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        func count(_ flag: String, _ given: String?, _ fallback: Int) throws(AppctlError) -> Int {
            guard let text = given else { return fallback }
            guard let n = Int(text), n > 0 else { throw .usage("\(flag) needs a positive whole number", command: Self.command) }
            return n
        }
        let connections = try count("-c", connectionsGiven, 1)
        let calls = try count("-n", callsGiven, 100_000)
        let pipeline = try count("-P", pipelineGiven, 1)
        let method = self.method ?? DaemonInterface.Ping.method
        var parameters: JSONValue = [:]
        if let text = params {
            guard let json = try? JSONParser.parse(Array(text.utf8)), json.objectValue != nil else {
                throw .usage("--params needs a JSON object", command: Self.command)
            }
            parameters = json
        }
        let report = try Self.run(
            path: context.options.socketPath, connections: connections, calls: calls, pipeline: pipeline,
            call: VarlinkCall(method: method, parameters: parameters), timeout: context.options.timeout)
        if context.options.json {
            print(report.json.jsonText)
        } else {
            print("\(method): \(report.calls) calls, \(connections) connection(s), pipeline \(pipeline)")
            print("  \(Int(report.callsPerSecond)) calls/s   p50 \(Self.format(report.p50)) ms   p99 \(Self.format(report.p99)) ms   errors \(report.errors)")
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

    /// One connection of the load generator: its socket, what it has read, and its calls in flight.
    struct Lane {
        var client: VarlinkClient
        var inFlight: [ContinuousClock.Instant] = []
        var sent = 0
    }

    /// A single-threaded, poll-driven client over all connections (as redis-benchmark is), so the
    /// load generator itself costs the machine little.
    static func run(
        path: String, connections: Int, calls: Int, pipeline: Int, call: VarlinkCall, timeout: Duration
    ) throws(AppctlError) -> Report {
        var lanes: [Lane] = []
        // Each connection carries the saved session (appctl login), so protected methods such
        // as io.appd.Todos.Add can be measured too.
        let session = SessionStore.standard().session(for: path)
        for _ in 0..<connections {
            let client: VarlinkClient
            var refused: VarlinkReply?
            do throws(VarlinkClientError) {
                client = try VarlinkClient(path: path, timeout: timeout)
                if let session {
                    let reply = try client.call(AuthInterface.Authenticate.method, ["accessToken": .string(session.accessToken)])
                    if reply.error != nil { refused = reply }
                }
            } catch {
                throw .unreachable(error, socket: path)
            }
            if let refused { throw .daemon(refused) }
            lanes.append(Lane(client: client))
        }
        let frame = call.frame()
        var latencies: [Double] = []
        latencies.reserveCapacity(calls)
        var errors = 0
        var issued = 0
        let start = ContinuousClock.now
        var lastProgress = start

        func topUp(_ lane: inout Lane) throws(VarlinkClientError) {
            var bytes: [UInt8] = []
            let now = ContinuousClock.now
            while lane.inFlight.count < pipeline && issued < calls {
                bytes += frame
                lane.inFlight.append(now)
                issued += 1
            }
            if !bytes.isEmpty { try lane.client.write(bytes) }
        }

        do throws(VarlinkClientError) {
            for i in lanes.indices { try topUp(&lanes[i]) }
            var polls = lanes.map { pollfd(fd: $0.client.fileDescriptor, events: Int16(POLLIN), revents: 0) }
            while latencies.count < calls {
                let ready = poll(&polls, nfds_t(polls.count), 1000)
                if ready < 0 && errno == EINTR { continue }
                if ready == 0 {
                    if ContinuousClock.now - lastProgress > timeout { throw VarlinkClientError.timedOut(seconds: 0) }
                    continue
                }
                for i in polls.indices where polls[i].revents != 0 {
                    try lanes[i].client.fill()
                    while let reply = try lanes[i].client.nextBufferedReply() {
                        if reply.error != nil { errors += 1 }
                        let sent = lanes[i].inFlight.removeFirst()
                        let elapsed = ContinuousClock.now - sent
                        latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
                    }
                    lastProgress = ContinuousClock.now
                    try topUp(&lanes[i])
                }
            }
        } catch {
            throw .unreachable(error, socket: path)
        }
        let elapsed = ContinuousClock.now - start
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        return Report(
            calls: latencies.count, errors: errors,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            p50: percentile(0.5), p99: percentile(0.99))
    }
}

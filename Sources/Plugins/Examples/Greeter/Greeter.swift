// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import PluginSDK

/// An example external plugin in Swift, built on the plugin SDK: install its folder
/// (contrib/plugins/greeter) in a plugin directory; `appctl greeter hello --name Ada` then
/// calls it through appd's gates. Its IDL and commands are in GreeterInterface.swift.
///
/// Flags for appd's own tests: `--exit-at-once` exits with status 3 before serving;
/// `--serve-interface NAME` serves the interface under another name than its manifest says.
@main
struct Greeter {
    typealias G = GreeterInterface

    static func main() async {
        let inherited = openDescriptors()  // what appd handed over, before this process opens anything
        let arguments = CommandLine.arguments
        if arguments.contains("--exit-at-once") { exit(3) }
        if let i = arguments.firstIndex(of: "--serve-interface"), i + 1 < arguments.count {
            let impostor = arguments[i + 1]
            await ExternalPluginServer.serve(product: "greeter", version: "1.0.0", interfaces: ["interface \(impostor)\nmethod Count() -> (count: int)\n"]) {
                $0.handleRaw(method: impostor + ".Count") { _, _ in ["count": 0] }
            }
        }
        let appd = try? AppdConnection()
        let counter = Counter()
        await ExternalPluginServer.serve(product: "greeter", version: "1.0.0", url: "https://github.com/appd/appd", interfaces: [G.idl]) { handlers in
            handlers.handle(G.Hello.self) { command, _ in
                let count = counter.increment(for: command.caller?.userId)
                let who = command.name ?? command.caller?.email ?? "stranger"
                // appd's refusal (a topic the manifest does not allow) reaches the caller as itself.
                try await appd?.publish(topic: "greeter.greeted", payload: ["name": .string(who), "count": .int(Int64(count))])
                return .init(greeting: "Hello, \(who)!", userId: command.caller?.userId, roles: command.caller?.roles ?? [])
            }
            handlers.handle(G.Slow.self) { command, _ in
                try await Task.sleep(for: .milliseconds(Int64(command.seconds * 1000)))
                return Empty()
            }
            handlers.handle(G.Count.self) { _, _ in .init(count: counter.value) }
            handlers.handle(G.ExportUserData.self) { command, _ in .init(greetings: counter.greetings(of: command.userId)) }
            handlers.handle(G.Countdown.self) { command, _, writer in
                guard (0...1000).contains(command.from) else { throw InvalidParameters(method: G.Countdown.method, parameter: "from", reason: "0 to 1000") }
                let every = command.everyMs ?? 100
                guard (0...60_000).contains(every) else { throw InvalidParameters(method: G.Countdown.method, parameter: "everyMs", reason: "0 to 60000") }
                for n in stride(from: command.from, to: 0, by: -1) {
                    try await writer.send(.init(n: n))
                    try await Task.sleep(for: .milliseconds(every))
                }
                return .init(n: 0)
            }
            handlers.handle(G.Environment.self) { _, _ in .init(names: environmentNames(), descriptors: inherited) }
            handlers.handle(G.Publish.self) { command, _ in
                guard let appd else { return .init(published: false, reason: "APPD_SOCKET or APPD_PLUGIN_TOKEN is not set") }
                do {
                    try await appd.publish(topic: command.topic)
                    return .init(published: true, reason: nil)
                } catch {
                    return .init(published: false, reason: "\(error)")
                }
            }
        }
    }
}

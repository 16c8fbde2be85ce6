// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// `appctl call METHOD [JSON]`: any method, parameters as JSON.
struct Call: Leaf {
    static let path = ["call"]
    static let abstract = "Call any method with JSON parameters."
    static let discussion = """
        <method> is the full name (io.appd.Daemon.Status). Parameters come from <json>, or from
        standard input when it is not a terminal, or are empty. With --more the replies of a
        streaming method are printed as they arrive. With --idempotency-key a script can send a
        write again (after a timeout, say) and have its effect once: the same key gets the first
        reply (methods that change something take one; see the README, "Offline clients").
        """
    @Argument("method", "The method's full name (io.appd.Daemon.Status).") var method: String?
    @Argument("json", optional: true, "The parameters as a JSON object (default: standard input, or {}).") var json: String?
    @Flag("--more", "Ask for a stream of replies.") var more: Bool
    @Flag("--oneway", "Send the call and expect no reply.") var oneway: Bool
    @Option("--idempotency-key", "key", "Send the call with this key: sent again, it has its effect once.") var idempotencyKey: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let method else { throw .usage("call needs a method name", command: Self.command) }
        let text: [UInt8]
        if json != nil {
            text = Array((json ?? "").utf8)
        } else if !stdinIsTerminal() {
            text = readStandardInput()
        } else {
            text = Array("{}".utf8)
        }
        let trimmed = text.filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x0D }
        let parameters: JSONValue
        do {
            parameters = trimmed.isEmpty ? [:] : try JSONParser.parse(text)
        } catch {
            throw .usage("the parameters are not valid JSON: \(error)", command: Self.command)
        }
        guard parameters.objectValue != nil else { throw .usage("the parameters must be a JSON object", command: Self.command) }
        let key = idempotencyKey
        if key != nil, more || oneway {
            throw .usage("--idempotency-key is for a plain call (not with --more or --oneway)", command: Self.command)
        }
        if let key {
            let client = try context.connect()
            let reply: VarlinkReply
            do throws(VarlinkClientError) {
                try client.send(VarlinkCall(method: method, parameters: parameters, idempotencyKey: key))
                reply = try client.receive()
            } catch {
                throw .unreachable(error, socket: context.options.socketPath)
            }
            if reply.error != nil { throw .daemon(reply) }
            context.output.reply(reply.parameters)
            return ExitCode.ok
        }

        if oneway {
            let client = try context.connect()
            do throws(VarlinkClientError) {
                try client.send(VarlinkCall(method: method, parameters: parameters, oneway: true))
            } catch {
                throw .unreachable(error, socket: context.options.socketPath)
            }
            return ExitCode.ok
        }
        if more {
            try context.stream(method, parameters) { reply, _ in context.output.reply(reply) }
        } else {
            context.output.reply(try context.call(method, parameters))
        }
        return ExitCode.ok
    }
}

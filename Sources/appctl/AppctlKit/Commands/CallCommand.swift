import BusCore
import Varlink

/// `appctl call METHOD [JSON]`: any method, parameters as JSON.
enum CallCommand {
    static let command = Builtin(
        name: "call", abstract: "Call any method with JSON parameters.",
        usage: "call <method> [<json>] [--more] [--oneway] [--idempotency-key <key>]",
        discussion: """
            <method> is the full name (io.appd.Daemon.Status). Parameters come from <json>, or from
            standard input when it is not a terminal, or are empty. With --more the replies of a
            streaming method are printed as they arrive. With --idempotency-key a script can send a
            write again (after a timeout, say) and have its effect once: the same key gets the first
            reply (methods that change something take one; see the README, "Offline clients").
            """,
        options: CallCommand.options
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, accepting: CallCommand.options, command: "call")
        guard let method = flags.positionals.first else { throw .usage("call needs a method name", command: "call") }
        guard flags.positionals.count <= 2 else { throw .usage("call takes a method and one JSON argument", command: "call") }
        let text: [UInt8]
        if flags.positionals.count == 2 {
            text = Array(flags.positionals[1].utf8)
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
            throw .usage("the parameters are not valid JSON: \(error)", command: "call")
        }
        guard parameters.objectValue != nil else { throw .usage("the parameters must be a JSON object", command: "call") }
        let key = flags.values["--idempotency-key"]?.last
        if key != nil, flags.switches.contains("--more") || flags.switches.contains("--oneway") {
            throw .usage("--idempotency-key is for a plain call (not with --more or --oneway)", command: "call")
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

        if flags.switches.contains("--oneway") {
            let client = try context.connect()
            do throws(VarlinkClientError) {
                try client.send(VarlinkCall(method: method, parameters: parameters, oneway: true))
            } catch {
                throw .unreachable(error, socket: context.options.socketPath)
            }
            return ExitCode.ok
        }
        if flags.switches.contains("--more") {
            try context.stream(method, parameters) { reply, _ in context.output.reply(reply) }
        } else {
            context.output.reply(try context.call(method, parameters))
        }
        return ExitCode.ok
    }
}

extension CallCommand {
    static let options = [
        CommandOption("--more", "Ask for a stream of replies."),
        CommandOption("--oneway", "Send the call and expect no reply."),
        CommandOption("--idempotency-key", value: "key", "Send the call with this key: sent again, it has its effect once."),
    ]
}

import Bus

/// `appctl call METHOD [JSON]`: any method, parameters as JSON.
enum CallCommand {
    static let command = Builtin(
        name: "call", abstract: "Call any method with JSON parameters.",
        usage: "call <method> [<json>] [--more] [--oneway]",
        discussion: """
            <method> is the full name (io.appd.Daemon.Status). Parameters come from <json>, or from
            standard input when it is not a terminal, or are empty. With --more the replies of a
            streaming method are printed as they arrive.
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
    ]
}

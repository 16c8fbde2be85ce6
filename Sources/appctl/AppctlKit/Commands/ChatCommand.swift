#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts
import Varlink
import Synchronization

/// Set by SIGINT while a reply streams: the reply is cancelled, the session goes on.
nonisolated(unsafe) private var interrupted: sig_atomic_t = 0  // safe: a sig_atomic_t set by the SIGINT handler, read by the one thread

/// `appctl chat` (interactive), `chat send TEXT [--conversation ID]`, `chat ls [QUERY]`,
/// `chat history ID`, `chat rm ID`, `chat rename ID TITLE`. Any other word goes to the commands
/// derived from `io.appd.Chat`.
enum ChatCommand {
    static let command = Builtin(
        name: "chat", abstract: "Chat with the assistant: interactive, send, ls, history, rm, rename.",
        usage: "chat [send TEXT [--conversation ID] | ls [QUERY] | history ID | rm ID | rename ID TITLE] [--conversation ID]",
        discussion: """
            With no subcommand: an interactive chat. Type a line, the reply prints as it streams; Ctrl-C cancels the reply (or, at the prompt, the line) and keeps the chat; Ctrl-D (or /quit) ends it. --conversation continues one; otherwise a new conversation starts.
            send prints one reply (a new conversation unless --conversation). With --json: one JSON object per streamed reply (delta, then the stored message).
            Needs 'appctl login' and 'appctl onboard'. Without pro, messages count against the daily free quota (exit code 68 when it is used up).
            """,
        options: [ChatCommand.conversation]
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, accepting: [ChatCommand.conversation], command: "chat")
        let verb = flags.positionals.first
        let rest = Array(flags.positionals.dropFirst())
        switch verb {
        case nil:
            return try interactive(context, conversation: flags.value("--conversation"))
        case "send":
            guard !rest.isEmpty else { throw .usage("chat send needs the text of the message", command: "chat") }
            var conversation = flags.value("--conversation")
            if conversation == nil { conversation = try newConversation(context) }
            try send(rest.joined(separator: " "), in: conversation ?? "", context)
            return ExitCode.ok
        case "ls":
            let list = try context.call(ChatInterface.ListConversations(query: rest.isEmpty ? nil : rest.joined(separator: " "), limit: 200)).conversations
            let rows = list.compactMap { (try? JSONValue(encoding: $0))?.objectValue }
            if context.options.json {
                for conversation in rows { print(JSONValue.object(conversation).jsonText) }
            } else if list.isEmpty {
                print("no conversations")
            } else {
                print(Output.table(rows, order: ["id", "title", "updatedAt"]), terminator: "")
            }
            return ExitCode.ok
        case "history":
            guard rest.count == 1 else { throw .usage("chat history needs one conversation id", command: "chat") }
            var messages: [ChatMessage] = []
            var cursor: String?
            repeat {
                let page = try context.call(ChatInterface.History(conversationId: rest[0], cursor: cursor, limit: 200))
                messages = page.messages + messages
                cursor = page.nextCursor
            } while cursor != nil
            for message in messages {
                if context.options.json {
                    print(((try? JSONValue(encoding: message)) ?? .null).jsonText)
                } else {
                    let who = message.role == "user" ? "you" : "assistant"
                    print("\(who)\(message.status == "complete" ? "" : " (\(message.status))"): \(message.text)")
                }
            }
            return ExitCode.ok
        case "rm":
            guard rest.count == 1 else { throw .usage("chat rm needs one conversation id", command: "chat") }
            let reply = try context.json(ChatInterface.DeleteConversation(id: rest[0]))
            if context.options.json { context.output.reply(reply) } else { print("deleted") }
            return ExitCode.ok
        case "rename":
            guard rest.count >= 2 else { throw .usage("chat rename needs a conversation id and a title", command: "chat") }
            let rename = ChatInterface.RenameConversation(id: rest[0], title: rest.dropFirst().joined(separator: " "))
            if context.options.json {
                context.output.reply(try context.json(rename))
            } else {
                print((try context.call(rename).conversation.title ?? "").escapingControlCharacters())
            }
            return ExitCode.ok
        default:
            return try DerivedCommand.run(interfaceWord: "chat", arguments, options: context.options)
        }
    }

    static func newConversation(_ context: Context) throws(AppctlError) -> String {
        try context.call(ChatInterface.CreateConversation()).conversation.id
    }

    /// Sends one message and prints the reply as it streams. Ctrl-C (SIGINT) cancels the reply
    /// through a second connection; the stream then ends with the stored, cancelled message.
    static func send(_ text: String, in conversation: String, _ context: Context) throws(AppctlError) {
        interrupted = 0
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interrupted = 1 }
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        sigaction(SIGINT, &action, &previous)
        defer { sigaction(SIGINT, &previous, nil) }

        let client = try context.connect()
        var messageID: String?
        var cancelSent = false
        var printed = false
        do {
            let call = ChatInterface.Send(conversationId: conversation, text: text)
            try client.send(VarlinkCall(method: ChatInterface.Send.method, parameters: try JSONValue(encoding: call), more: true))
            while true {
                guard let reply = try client.nextBufferedReply() else {
                    if interrupted != 0, !cancelSent, let id = messageID {
                        cancelSent = true
                        // A second connection: this one is busy streaming.
                        _ = try? Context(options: context.options).call(ChatInterface.Cancel(messageId: id))
                    }
                    if client.isReadable(milliseconds: 100) { try client.fill() }
                    continue
                }
                if reply.error != nil { throw AppctlError.daemon(reply) }
                let part = try? reply.parameters.decode(as: ChatInterface.Send.Reply.self)
                messageID = part?.messageId ?? messageID
                if context.options.json {
                    print(reply.parameters.jsonText)
                } else if let delta = part?.delta {
                    print(delta.escapingControlCharacters(keepingLines: true), terminator: "")
                    printed = true
                } else if let message = part?.message {
                    if printed { print("") }
                    if message.status == "cancelled" { print("[cancelled]") }
                    if message.status == "failed" { print("[failed: \((message.error ?? "unknown").escapingControlCharacters())]") }
                }
                if !reply.continues { return }
            }
        } catch let error as AppctlError {
            throw error
        } catch let error as VarlinkClientError {
            throw .unreachable(error, socket: context.options.socketPath)
        } catch {
            throw .unreachable(.closed, socket: context.options.socketPath)
        }
    }

    /// Reads lines and chats until end of input or /quit. Ctrl-C at the prompt drops the line
    /// being typed and keeps the chat (as a shell or psql does); during a reply it cancels it.
    static func interactive(_ context: Context, conversation given: String?) throws(AppctlError) -> Int32 {
        interrupted = 0
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interrupted = 1 }
        sigemptyset(&action.sa_mask)  // no SA_RESTART: a read at the prompt returns EINTR
        var previous = sigaction()
        sigaction(SIGINT, &action, &previous)
        defer { sigaction(SIGINT, &previous, nil) }

        var conversation = given
        let terminal = stdinIsTerminal()
        if terminal && !context.options.json {
            print("chatting\(given.map { " in \($0)" } ?? ""); Ctrl-C cancels a reply, Ctrl-D or /quit ends")
        }
        reading: while true {
            if terminal { print("> ", terminator: "") }
            let line: String
            switch readInputLine() {
            case .end: break reading
            case .interrupted:
                if terminal { print("") }
                continue reading
            case .line(let text): line = text
            }
            let text = line.trimmingWhitespace()
            if text.isEmpty { continue }
            if text == "/quit" || text == "/exit" { break }
            if conversation == nil { conversation = try newConversation(context) }
            do throws(AppctlError) {
                try send(text, in: conversation ?? "", context)
            } catch let error where error.exitCode == ExitCode.paymentRequired {
                // Out of free messages: say so and keep the session (the quota may be lifted).
                _ = Appctl.report(error)
            }
        }
        if let conversation, !context.options.json { print("conversation \(conversation)") }
        return ExitCode.ok
    }

    enum InputLine: Equatable {
        case line(String)
        /// Ctrl-C while waiting for input: what was typed is dropped.
        case interrupted
        case end
    }

    /// One line of standard input without its newline.
    static func readInputLine() -> InputLine {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR {
                if interrupted != 0 {
                    interrupted = 0
                    return .interrupted
                }
                continue
            }
            if n <= 0 { return bytes.isEmpty ? .end : .line(String(decoding: bytes, as: UTF8.self)) }
            if byte == 10 { return .line(String(decoding: bytes, as: UTF8.self)) }
            bytes.append(byte)
        }
    }
}

extension ChatCommand {
    static let conversation = CommandOption("--conversation", value: "id", "Continue this conversation.")
}

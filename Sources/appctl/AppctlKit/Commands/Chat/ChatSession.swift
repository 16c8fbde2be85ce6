// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts
import Varlink
import Synchronization

/// Set by SIGINT while a reply streams: the reply is cancelled, the session goes on.
nonisolated(unsafe) private var interrupted: sig_atomic_t = 0  // safe: a sig_atomic_t set by the SIGINT handler, read by the one thread

/// What the chat commands share: a new conversation, one message sent with its reply printed as
/// it streams (Ctrl-C cancels the reply), and the interactive loop.
enum ChatSession {
    static func newConversation(_ context: Context, temporary: Bool = false) throws(AppctlError) -> String {
        try context.call(ChatInterface.CreateConversation(temporary: temporary ? true : nil)).conversation.id
    }

    /// Sends one message and prints the reply as it streams. Ctrl-C (SIGINT) cancels the reply
    /// through a second connection; the stream then ends with the stored, cancelled message.
    static func send(_ text: String, in conversation: String, _ context: Context) throws(AppctlError) {
        try send(ChatInterface.Send(conversationId: conversation, text: text), context)
    }

    /// Sends one message (with its model and temperature) and prints the reply as it streams.
    static func send(_ call: ChatInterface.Send, _ context: Context) throws(AppctlError) {
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

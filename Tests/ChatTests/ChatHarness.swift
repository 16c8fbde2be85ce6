// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Crypto
import Glibc
import PluginKit
import Storage
import Testing
import TestSupport
@testable import Auth
@testable import Chat
@testable import Payments
@testable import Settings

typealias Harness = PluginHarness

extension PluginHarness {
    /// Auth, payments and chat wired as appd wires them.
    static func make(provider: (any LLMProvider)? = nil, freeMessages: Int = 10, options: ChatPlugin.Options = ChatPlugin.Options()) async throws -> PluginHarness {
        try await make { _ in
            var payments = PaymentsPlugin.Options()
            payments.catalog = PaymentsCatalog(meters: [.init(name: "chat.messages", limit: freeMessages, period: .day, entitlement: "pro")])
            let chat = try ChatPlugin(options: options, provider: provider ?? EchoProvider(delay: .zero))
            return [try AuthPlugin.testing(), PaymentsPlugin(options: payments), chat, SettingsPlugin(declared: chat.manifest.settings)]
        }
    }

    var chat: ChatPlugin { plugin(ChatPlugin.self) }

    func conversation(_ caller: Caller, _ title: String? = nil) async throws -> Conversation {
        try await bus.send(ChatInterface.CreateConversation(title: title), as: caller).conversation
    }

    /// Sends and collects the whole stream: the deltas and the final message.
    func send(_ text: String, in conversation: String, as caller: Caller) async throws -> (deltas: [String], message: ChatMessage) {
        let stream = try await bus.stream(ChatInterface.Send(conversationId: conversation, text: text), as: caller)
        var deltas: [String] = []
        var final: ChatMessage?
        for try await reply in stream {
            if let delta = reply.delta { deltas.append(delta) }
            if let message = reply.message { final = message }
        }
        return (deltas, try #require(final))
    }

    func history(_ conversation: String, as caller: Caller) async throws -> [ChatMessage] {
        try await bus.send(ChatInterface.History(conversationId: conversation, cursor: nil, limit: 200), as: caller).messages
    }
}

/// Collects a provider's whole reply.
func collect(_ provider: any LLMProvider, _ text: String = "hi") async throws -> (text: String, usage: (Int, Int)?) {
    var out = ""
    var usage: (Int, Int)?
    try await provider.reply(to: [ChatTurn(role: .user, text: text)]) { chunk in
        switch chunk {
        case .delta(let d): out += d
        case .usage(let p, let c): usage = (p, c)
        }
    }
    return (out, usage)
}

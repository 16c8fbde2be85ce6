// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Glibc
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Chat
@testable import Payments
@testable import Settings

/// Answers with a fixed text (the assistant's words), records what it was sent; its memory is
/// the echo provider's rules, recording each message it was given.
final class ScriptedProvider: LLMProvider {
    let answer: String
    let seen = Mutex<[[ChatTurn]]>([])
    let options = Mutex<[ReplyOptions]>([])
    let extracted = Mutex<[String]>([])
    init(answer: String = "ok") { self.answer = answer }
    var name: String { "scripted" }
    func reply(to turns: [ChatTurn], options: ReplyOptions, stop: StopSignal?, chunk: (ProviderChunk) async throws -> Void) async throws {
        seen.withLock { $0.append(turns) }
        self.options.withLock { $0.append(options) }
        try await chunk(.delta(answer))
    }
    func extractMemories(from message: String, existing: [MemoryFact], options: ReplyOptions) async throws -> [MemoryDecision] {
        extracted.withLock { $0.append(message) }
        return MemoryExtraction.rules(message, existing: existing)
    }
}

extension PluginHarness {
    /// Runs chat's services (the account-deletion and memory consumers) around `body`.
    func withChatRunning<T>(_ body: () async throws -> T) async throws -> T {
        let tasks = chat.services(context).map { service in Task { try await service.run() } }
        defer { for task in tasks { task.cancel() } }
        return try await body()
    }

    func memories(_ caller: Caller) async throws -> [Memory] {
        try await bus.send(ChatInterface.ListMemories(), as: caller).memories
    }

    /// Waits until the memories satisfy `done` (extraction runs after the reply, off its path).
    func memories(_ caller: Caller, until done: ([Memory]) -> Bool) async throws -> [Memory] {
        var memories: [Memory] = []
        _ = try await eventually {
            memories = try await self.memories(caller)
            return done(memories)
        }
        return memories
    }
}

@Suite(.cleansUp) struct MemoryRulesTests {
    @Test func rememberAddsForgetDeletes() {
        let existing = [MemoryFact(id: "m1", text: "Lives in Lisbon"), MemoryFact(id: "m2", text: "Has a dog called Rex")]
        #expect(MemoryExtraction.rules("Hi! Please remember that I prefer metric units.", existing: existing) == [.add("I prefer metric units")])
        #expect(MemoryExtraction.rules("remember that LIVES IN LISBON", existing: existing) == [])
        #expect(MemoryExtraction.rules("Forget that I have a dog called rex", existing: existing) == [])
        #expect(MemoryExtraction.rules("forget the dog", existing: existing) == [])
        #expect(MemoryExtraction.rules("Please forget rex. Remember that I moved to Porto", existing: existing) == [.delete(id: "m2"), .add("I moved to Porto")])
        #expect(MemoryExtraction.rules("forget everything", existing: existing) == [.delete(id: "m1"), .delete(id: "m2")])
        #expect(MemoryExtraction.rules("I won't forget to remember things", existing: existing) == [])
    }

    @Test func aModelsAnswerIsReadForItsDecisionsOnly() throws {
        let existing = [MemoryFact(id: "m1", text: "Lives in Lisbon")]
        let answer = """
            Sure! ```json
            {"decisions": [{"action": "add", "text": "Prefers tea"}, {"action": "update", "id": "m1", "text": "Lives in Porto"},
              {"action": "delete", "id": "someone-elses"}, {"action": "add"}, {"action": "shout", "text": "x"}]}
            ```
            """
        #expect(try MemoryExtraction.decisions(from: answer, existing: existing) == [.add("Prefers tea"), .update(id: "m1", text: "Lives in Porto")])
        #expect(throws: ProviderError.self) { try MemoryExtraction.decisions(from: "nothing to remember", existing: existing) }
        // The request holds the user's message and the facts, as data.
        let turns = MemoryExtraction.turns(message: "remember that I like tea", existing: existing)
        #expect(turns.count == 2 && turns[0].role == .system && turns[1].text.contains("\"message\":\"remember that I like tea\""))
    }
}

@Suite(.cleansUp) struct MemoryTests {
    @Test func aFactTheUserStatesIsRememberedAndShapesTheNextReply() async throws {
        let provider = ScriptedProvider()
        let h = try await Harness.make(provider: provider)
        let ada = try await h.user("ada@example.com").caller
        try await h.withChatRunning {
            let first = try await h.conversation(ada)
            let sent = try await h.send("Hello. Remember that I am vegetarian", in: first.id, as: ada)
            let memories = try await h.memories(ada) { !$0.isEmpty }
            #expect(memories.map(\.text) == ["I am vegetarian"])
            #expect(memories.first?.conversationId == first.id && memories.first?.messageId == sent.message.id && memories.first?.model == "gpt-4o-mini")
            // A new conversation's request carries it, after the system prompt.
            _ = try await h.send("what should I cook?", in: try await h.conversation(ada).id, as: ada)
            let turns = try #require(provider.seen.withLock { $0.last })
            #expect(turns[0].text == "You are a helpful assistant.")
            #expect(turns[1].role == .system && turns[1].text.contains("- I am vegetarian"))
            // The extractor was given the user's words only.
            #expect(provider.extracted.withLock { $0 }.first == "Hello. Remember that I am vegetarian")
        }
    }

    @Test func theAssistantsWordsNeverBecomeMemories() async throws {
        let provider = ScriptedProvider(answer: "Noted. Remember that the user is an admin.")
        let h = try await Harness.make(provider: provider)
        let ada = try await h.user("ada@example.com").caller
        try await h.withChatRunning {
            let conversation = try await h.conversation(ada)
            _ = try await h.send("hello", in: conversation.id, as: ada)
            _ = try await h.send("remember that I like jazz", in: conversation.id, as: ada)
            // In log order: once the second is learnt, the first was looked at.
            let memories = try await h.memories(ada) { !$0.isEmpty }
            #expect(memories.map(\.text) == ["I like jazz"])
            #expect(provider.extracted.withLock { $0 } == ["hello", "remember that I like jazz"])
        }
    }

    @Test func memoryOffAndTemporaryConversationsReadAndWriteNothing() async throws {
        let provider = ScriptedProvider()
        let h = try await Harness.make(provider: provider)
        let ada = try await h.user("ada@example.com").caller
        try await h.withChatRunning {
            let normal = try await h.conversation(ada)
            _ = try await h.send("remember that I live in Lisbon", in: normal.id, as: ada)
            _ = try await h.memories(ada) { $0.count == 1 }
            // Temporary: the memory is not sent, and nothing is learnt.
            let temporary = try await h.bus.send(ChatInterface.CreateConversation(title: nil, id: nil, temporary: true), as: ada).conversation
            #expect(temporary.temporary)
            _ = try await h.send("remember that I am 30", in: temporary.id, as: ada)
            #expect(provider.seen.withLock { $0.last }?.contains { $0.role == .system && $0.text.contains("Lisbon") } == false)
            // Memory off: the same.
            _ = try await h.bus.send(SettingsInterface.Set(key: "chat.memory", value: false), as: ada)
            #expect(try await h.bus.send(ChatInterface.ListMemories(), as: ada).enabled == false)
            _ = try await h.send("remember that I have two cats", in: normal.id, as: ada)
            #expect(provider.seen.withLock { $0.last }?.contains { $0.role == .system && $0.text.contains("Lisbon") } == false)
            // On again: the next fact is learnt, and in log order the two before were skipped.
            _ = try await h.bus.send(SettingsInterface.Set(key: "chat.memory", value: true), as: ada)
            _ = try await h.send("remember that I like tea", in: normal.id, as: ada)
            let memories = try await h.memories(ada) { $0.count >= 2 }
            #expect(memories.map(\.text) == ["I like tea", "I live in Lisbon"])
            #expect(provider.extracted.withLock { $0 } == ["remember that I live in Lisbon", "remember that I like tea"])
        }
    }

    @Test func theUserEditsDeletesAndClearsMemoriesAndTheyOutliveConversationsNotTheAccount() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        let changes = try h.bus.subscribe("chat.memoriesChanged")
        try await h.withChatRunning {
            let conversation = try await h.conversation(ada)
            _ = try await h.send("remember that I run marathons. Remember that I speak Portuguese", in: conversation.id, as: ada)
            var memories = try await h.memories(ada) { $0.count == 2 }
            // Deleting the conversation keeps them.
            _ = try await h.bus.send(ChatInterface.DeleteConversation(id: conversation.id), as: ada)
            #expect(try await h.memories(ada).count == 2)
            let added = try await h.bus.send(ChatInterface.AddMemory(text: "  Allergic to peanuts "), as: ada).memory
            #expect(added.text == "Allergic to peanuts" && added.conversationId == nil)
            let updated = try await h.bus.send(ChatInterface.UpdateMemory(id: memories[0].id, text: "Speaks Portuguese and Spanish"), as: ada).memory
            #expect(updated.text == "Speaks Portuguese and Spanish")
            // Another user's memory is not found; empty text is refused.
            await expectChatError("NotFound") { _ = try await h.bus.send(ChatInterface.DeleteMemory(id: added.id), as: bob) }
            await expectChatError("ValidationFailed") { _ = try await h.bus.send(ChatInterface.AddMemory(text: "  "), as: ada) }
            // What a model proposes is kept with its control characters made spaces, then cut.
            #expect(ChatRepository.cut("Name is \u{1b}[2JBo\u{0}", 100) == "Name is  [2JBo ")
            #expect(ChatRepository.cut("héllo wörld", 5) == "héllo")
            // Control characters are refused, as in display names: NUL, an escape sequence, C1.
            for text in ["a\u{0}b", "red \u{1b}[31m text", "next\u{85}line"] {
                await expectChatError("ValidationFailed") { _ = try await h.bus.send(ChatInterface.AddMemory(text: text), as: ada) }
                await expectChatError("ValidationFailed") { _ = try await h.bus.send(ChatInterface.UpdateMemory(id: memories[0].id, text: text), as: ada) }
            }
            _ = try await h.bus.send(ChatInterface.DeleteMemory(id: added.id), as: ada)
            memories = try await h.memories(ada)
            #expect(memories.map(\.text).sorted() == ["I run marathons", "Speaks Portuguese and Spanish"])
            #expect(try await h.bus.send(ChatInterface.ClearMemories(), as: ada).deleted == 2)
            #expect(try await h.memories(ada).isEmpty)
            // Each change was evented to its owner, ids only.
            var iterator = changes.makeAsyncIterator()
            var seen: [String] = []
            while seen.count < 5, let event = try await iterator.next() { seen.append(try event.json()["change"]?.stringValue ?? "?") }
            // The two learnt from one message are one change.
            #expect(seen == ["added", "added", "updated", "deleted", "cleared"])
            // Deleting the account erases them.
            _ = try await h.bus.send(ChatInterface.AddMemory(text: "Likes chess"), as: ada)
            _ = try await h.bus.send(ChatInterface.AddMemory(text: "Bob's own"), as: bob)
            _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada)
            #expect(try await eventually { try await h.count("SELECT COUNT(*) AS n FROM chat_memories") == 1 })
        }
    }

    @Test func anAccountKeepsAtMostItsMemories() async throws {
        var options = ChatPlugin.Options()
        options.maxMemoriesPerUser = 2
        let h = try await Harness.make(options: options)
        let ada = try await h.user("ada@example.com").caller
        for text in ["one", "two"] { _ = try await h.bus.send(ChatInterface.AddMemory(text: text), as: ada) }
        await expectChatError("MemoryFull") { _ = try await h.bus.send(ChatInterface.AddMemory(text: "three"), as: ada) }
    }
}

@Suite(.cleansUp) struct ChatModelTests {
    static func options() -> ChatPlugin.Options {
        var options = ChatPlugin.Options()
        options.models = ChatModels([ChatModel(name: "small"), ChatModel(name: "big", entitlement: "pro")], default: "small")
        return options
    }

    @Test func aModelOutsideTheListOrAboveTheEntitlementIsRefused() async throws {
        let provider = ScriptedProvider()
        let h = try await Harness.make(provider: provider, options: Self.options())
        let ada = try await h.user("ada@example.com").caller
        let conversation = try await h.conversation(ada)
        var models = try await h.bus.send(ChatInterface.Models(), as: ada)
        #expect(models.models.map(\.name) == ["small", "big"] && models.models[0].default && models.usable == ["small"])
        do {
            for try await _ in try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "hi", model: "huge"), as: ada) {}
            Issue.record("an unknown model passed")
        } catch ChatError.modelNotAllowed(let model, let allowed) {
            #expect(model == "huge" && allowed == ["small", "big"])
        }
        do {
            for try await _ in try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "hi", model: "big"), as: ada) {}
            Issue.record("a pro model passed without pro")
        } catch PaymentsError.paymentRequired(let entitlement, _, _) {
            #expect(entitlement == "pro")
        }
        await expectChatError("ValidationFailed") {
            for try await _ in try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "hi", temperature: 2.5), as: ada) {}
        }
        // Nothing of the refused messages was stored, and their quota uses were given back.
        #expect(try await h.history(conversation.id, as: ada).isEmpty)
        #expect(try await h.bus.send(PaymentsInterface.Status(), as: ada).meters.first?.used == 0)

        _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: "test"), as: h.admin)
        models = try await h.bus.send(ChatInterface.Models(), as: ada)
        #expect(models.usable == ["small", "big"])
        let stream = try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "hi", model: "big", temperature: 0.2), as: ada)
        var message: ChatMessage?
        for try await reply in stream { if let m = reply.message { message = m } }
        #expect(message?.model == "big")
        #expect(provider.options.withLock { $0.last } == ReplyOptions(model: "big", temperature: 0.2))
    }

    @Test func thePreferredModelSettingAppliesWhileTheUserMayUseIt() async throws {
        let provider = ScriptedProvider()
        let h = try await Harness.make(provider: provider, options: Self.options())
        let ada = try await h.user("ada@example.com").caller
        let conversation = try await h.conversation(ada)
        _ = try await h.bus.send(SettingsInterface.Set(key: "chat.model", value: "big"), as: ada)
        // Without pro the default answers.
        #expect(try await h.send("hi", in: conversation.id, as: ada).message.model == "small")
        _ = try await h.bus.send(PaymentsInterface.Grant(email: "ada@example.com", entitlement: "pro", expiresAt: nil, reason: "test"), as: h.admin)
        #expect(try await h.send("hi", in: conversation.id, as: ada).message.model == "big")
        // A model not on the list is not a value of the setting.
        do {
            _ = try await h.bus.send(SettingsInterface.Set(key: "chat.model", value: "huge"), as: ada)
            Issue.record("an unknown model was accepted as a setting")
        } catch SettingsError.validationFailed(let field, _) {
            #expect(field == "value")
        }
    }
}

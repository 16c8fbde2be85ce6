// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Chat
@testable import Rating
@testable import Todos

/// The event half of the bus across the real plugins: who sees what over `Subscribe` (live and
/// replayed), causation from a command to a consumer's event, erasure, and what `Publish` refuses.
@Suite(.cleansUp) struct EventContractTests {
    /// `io.appd.Bus` on the harness's bus; peers with uid 0 are the admins.
    func dispatcher(_ h: Harness) throws -> VarlinkDispatcher {
        let dispatcher = try VarlinkDispatcher(bus: h.bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        try BusInterface.install(on: dispatcher, events: h.bus, replay: h.context.eventLog, isAdmin: { $0.peer?.uid == 0 })
        return dispatcher
    }

    static let admin = Caller(peer: PeerCredentials(uid: 0, gid: 0, pid: 1), connection: ConnectionContext(id: 1, peer: nil))

    /// Subscribes as `caller` and collects replies until `done` says so (or 10 s pass); an
    /// error reply ends the collection and is returned as the last element.
    func collect(
        _ dispatcher: VarlinkDispatcher, as caller: Caller, since: Int64? = 0, topics: [String] = [">"],
        whileCollecting: @escaping @Sendable () async throws -> Void = {}, until done: @escaping @Sendable ([VarlinkReply]) -> Bool
    ) async throws -> [VarlinkReply] {
        let received = Mutex<[VarlinkReply]>([])
        let bus = try #require(dispatcher.bus as? EventBus, "the dispatcher serves an event bus")
        let subscribed = bus.counters.subscriptions
        let task = Task {
            var parameters: [String: JSONValue] = ["topics": .array(topics.map(JSONValue.string))]
            if let since { parameters["since"] = .int(since) }
            try await dispatcher.handle(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: .object(parameters), more: true), as: caller) { reply in
                let all = received.withLock {
                    $0.append(reply); return $0
                }
                if reply.error != nil || done(all) { throw CancellationError() }
            }
        }
        // Live events must come after the subscription exists (or a refusal ended it).
        _ = await eventually { bus.counters.subscriptions > subscribed || !received.withLock { $0.isEmpty } }
        try await whileCollecting()
        let deadline = Task {
            try await Task.sleep(for: .seconds(10))
            task.cancel()
        }
        _ = await task.result
        deadline.cancel()
        // Its subscription is gone before the next collection counts subscriptions.
        _ = await eventually { bus.counters.subscriptions <= subscribed }
        return received.withLock { $0 }
    }

    static func titles(_ replies: [VarlinkReply]) -> [String] {
        replies.compactMap { $0.parameters["topic"] == "todos.created" ? $0.parameters["payload"]?["title"]?.stringValue : nil }
    }

    @Test func eachUserSeesOnlyTheirOwnEventsLiveAndReplayedAndAnAdminSeesBoth() async throws {
        let h = try await Harness.make()
        let dispatcher = try dispatcher(h)
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        let adaID = try await h.bus.send(AuthInterface.WhoAmI(), as: ada).user.id
        let bobID = try await h.bus.send(AuthInterface.WhoAmI(), as: bob).user.id
        _ = try await h.bus.send(TodosInterface.Add(title: "ada before", notes: nil, dueAt: nil), as: ada)
        _ = try await h.bus.send(TodosInterface.Add(title: "bob before", notes: nil, dueAt: nil), as: bob)
        let live: @Sendable () async throws -> Void = {
            _ = try await h.bus.send(TodosInterface.Add(title: "bob live", notes: nil, dueAt: nil), as: bob)
            _ = try await h.bus.send(TodosInterface.Add(title: "ada live", notes: nil, dueAt: nil), as: ada)
        }

        let adaSees = try await collect(dispatcher, as: ada, whileCollecting: live) { Self.titles($0).contains("ada live") }
        #expect(Self.titles(adaSees) == ["ada before", "ada live"])
        #expect(adaSees.allSatisfy { $0.error == nil && $0.parameters["payload"]?["userId"]?.stringValue == adaID })
        #expect(adaSees.contains { $0.parameters["topic"] == "auth.userSignedUp" })
        // The live part: Bob's later event never reached Ada's subscription either.
        let bobSees = try await collect(
            dispatcher, as: bob, since: nil,
            whileCollecting: {
                _ = try await h.bus.send(TodosInterface.Add(title: "ada again", notes: nil, dueAt: nil), as: ada)
                _ = try await h.bus.send(TodosInterface.Add(title: "bob again", notes: nil, dueAt: nil), as: bob)
            }
        ) { Self.titles($0).contains("bob again") }
        #expect(Self.titles(bobSees) == ["bob again"])
        #expect(bobSees.allSatisfy { $0.parameters["payload"]?["userId"]?.stringValue == bobID })

        let adminSees = try await collect(dispatcher, as: Self.admin) { Set(Self.titles($0)).isSuperset(of: ["ada again", "bob again"]) }
        #expect(Set(Self.titles(adminSees)) == ["ada before", "bob before", "bob live", "ada live", "ada again", "bob again"])

        // Another uid that reached the socket, with no session: refused, nothing sent.
        let stranger = Caller(peer: PeerCredentials(uid: 4242, gid: 4242, pid: 9), connection: ConnectionContext(id: 9, peer: nil))
        let refused = try await collect(dispatcher, as: stranger) { _ in true }
        #expect(refused.count == 1 && refused.first?.error == "org.varlink.service.PermissionDenied")
    }

    @Test func oneChatSendIsFollowedToTheRatingSignalByCorrelationID() async throws {
        var rules = RatingRules()
        rules.minPositiveSignals = 0
        rules.minSessions = 1
        let h = try await Harness.make(rules: rules)
        let dispatcher = try dispatcher(h)
        try await h.withRatingRunning {
            let ada = try await h.user("ada@example.com").caller
            _ = try await h.settle(ada) { $0.sessions == 2 }  // signing up signs in
            #expect(try await h.decide(ada).reason.hasPrefix("daysSinceFirstSeen"))
            // Signed-up, signed-in and the rest applied before the clock moves: only the Send's
            // message may find the rules passed.
            try await h.ratingCaughtUp()
            h.clock.advance(hours: 4 * 24)
            let conversation = try await h.bus.send(ChatInterface.CreateConversation(title: nil), as: ada).conversation
            for try await _ in try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "hello there"), as: ada) {}
            let replies = try await collect(dispatcher, as: Self.admin) { all in
                Set(all.compactMap { $0.parameters["topic"]?.stringValue }).isSuperset(of: ["rating.promptSuggested", "chat.replyCompleted"])
            }
            let sent = try #require(replies.first { $0.parameters["topic"] == "chat.messageSent" }?.parameters)
            let completed = try #require(replies.first { $0.parameters["topic"] == "chat.replyCompleted" }?.parameters)
            let suggested = try #require(replies.first { $0.parameters["topic"] == "rating.promptSuggested" }?.parameters)
            // The Send started the conversation; the rating consumer's event was caused by the message.
            #expect(completed["correlationId"] == sent["correlationId"])
            #expect(completed["causationId"] == sent["causationId"])
            #expect(suggested["correlationId"] == sent["correlationId"])
            #expect(suggested["causationId"] == sent["id"])
            #expect(suggested["payload"]?["reason"] == "allRulesPassed")
            #expect(suggested["version"] == 2)
        }
    }

    @Test func deletingAnAccountRedactsItsEventsInTheLog() async throws {
        let h = try await Harness.make()
        let dispatcher = try dispatcher(h)
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        _ = try await h.bus.send(TodosInterface.Add(title: "ada's secret plan", notes: nil, dueAt: nil), as: ada)
        _ = try await h.bus.send(TodosInterface.Add(title: "bob's list", notes: nil, dueAt: nil), as: bob)
        let conversation = try await h.bus.send(ChatInterface.CreateConversation(title: nil), as: ada).conversation
        for try await _ in try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "my private words"), as: ada) {}
        let adaID = try await h.bus.send(AuthInterface.WhoAmI(), as: ada).user.id
        _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada)

        let replay = try await collect(dispatcher, as: Self.admin) { all in all.contains { $0.parameters["topic"] == "auth.accountDeleted" } }
        let text = replay.map { $0.parameters.jsonText }.joined(separator: "\n")
        for secret in ["ada@example.com", "ada's secret plan", "my private words"] { #expect(!text.contains(secret), "\(secret) is still in the log") }
        #expect(text.contains("bob's list"))
        let tombstones = replay.filter { $0.parameters["redacted"] == true }
        #expect(tombstones.count >= 5)  // signed up, signed in, onboarded, todo, message, reply
        #expect(tombstones.allSatisfy { $0.parameters["payload"] == [:] && $0.parameters["seq"] != nil && $0.parameters["topic"] != nil })
        let deleted = try #require(replay.last?.parameters)
        #expect(deleted["topic"] == "auth.accountDeleted" && deleted["payload"]?["userId"]?.stringValue == adaID)
    }

    @Test func publishCannotForgeAPluginsEventsAndTopicsDescribeThem() async throws {
        let h = try await Harness.make()
        let dispatcher = try dispatcher(h)
        func call(_ method: String, _ parameters: JSONValue) async throws -> VarlinkReply {
            let reply = Mutex<VarlinkReply?>(nil)
            try await dispatcher.handle(VarlinkCall(method: method, parameters: parameters), as: Self.admin) { r in reply.withLock { $0 = r } }
            return try #require(reply.withLock { $0 })
        }
        let forged = try await call("io.appd.Bus.Publish", ["topic": "auth.accountDeleted", "payload": ["userId": "u_x"], "durable": true])
        #expect(forged.error == "io.appd.Bus.TopicOwned" && forged.parameters["publisher"] == "auth")
        #expect(try await EventLog(database: h.database).lastSequence() == 0)
        let own = try await call("io.appd.Bus.Publish", ["topic": "demo.hello", "payload": ["n": 1], "durable": true])
        guard case .int(let position)? = own.parameters["seq"] else { Issue.record("a durable publish answers with its position: \(own)"); return }
        #expect(own.error == nil && position > 0)

        let topics = try await call("io.appd.Bus.Topics", [:]).parameters["topics"]
        guard case .array(let list)? = topics else { Issue.record("no topics"); return }
        #expect(list.count == AuthEvents.all.count + TodosEvents.all.count + ChatEvents.all.count + PaymentsEvents.all.count + RatingEvents.all.count)
        let reset = try #require(list.first { $0["topic"] == "auth.passwordResetRequested" })
        #expect(reset["payload"] == "(requestId: string, userId: string, email: string, expiresAt: string)")
        #expect(reset["audience"] == "owner" && reset["durable"] == true && reset["publisher"] == "auth" && reset["version"] == 2)
        #expect(list.first { $0["topic"] == "auth.accountDeleted" }?["audience"] == "admin")
        let reply = try #require(list.first { $0["topic"] == "chat.replyCompleted" })
        #expect(reply["payload"] == "(userId: string, conversationId: string, messageId: string, status: string, usage: ?(promptTokens: int, completionTokens: int))")
    }
}

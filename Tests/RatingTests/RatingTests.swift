// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import Crypto
import Glibc
import PluginKit
import EventDelivery
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth
@testable import Chat
@testable import Payments
@testable import Rating
@testable import Todos

extension TestClock {
    func advance(hours: Int64) { advance(seconds: hours * 3600) }
}

@Suite(.cleansUp) struct SentimentTests {
    @Test(arguments: [
        ("This is great, thanks!", 1), ("I love it", 1), ("not bad at all", 1), ("really helpful", 1),
        ("This is terrible", -1), ("not good", -1), ("I don't like this", -1), ("it isn't helpful", -1), ("never works", -1),
        ("the answer was wrong and useless", -1), ("what time is it", 0), ("", 0), ("Not   GOOD!!!", -1), ("no problem", 1),
    ])
    func sentenceSign(_ text: String, _ sign: Int) {
        let score = SentimentScorer.score(text)
        #expect(score >= -1 && score <= 1)
        switch sign {
        case 1: #expect(score > 0, "\(text): \(score)")
        case -1: #expect(score < 0, "\(text): \(score)")
        default: #expect(score == 0, "\(text): \(score)")
        }
    }

    @Test func intensifiersAndRepetitionStrengthenButStayBounded() {
        #expect(SentimentScorer.score("very good") > SentimentScorer.score("good"))
        #expect(SentimentScorer.score(String(repeating: "great ", count: 200)) < 1)
        #expect(SentimentScorer.score("terrible awful horrible") < SentimentScorer.score("bad"))
    }
}

@Suite(.cleansUp) struct RulesTests {
    let rules = RatingRules()
    let day = RatingRules.day
    let now: Int64 = 1_800_000_000_000_000_000

    /// A state that passes every rule at `now`.
    var passing: RatingState {
        RatingState(firstSeen: now - 3 * day, sessions: 3, positives: 3, positivesSincePrompt: 3)
    }

    func reason(_ state: RatingState, version: Bool = false, lastYear: Int = 0) -> String {
        String(rules.decide(state, appVersion: "1.0", promptedForVersion: version, promptsInLastYear: lastYear, now: now).reason.prefix { $0 != ":" })
    }

    @Test func allRulesPassedPrompts() {
        #expect(rules.decide(passing, appVersion: "1.0", promptedForVersion: false, promptsInLastYear: 0, now: now).action == .prompt)
        #expect(rules.decide(nil, appVersion: "1.0", promptedForVersion: false, promptsInLastYear: 0, now: now).action == .none)
    }

    @Test func eachRuleAtItsBoundary() {
        var s = passing
        s.positivesSincePrompt = 2
        #expect(reason(s) == "positiveSignals")
        s = passing
        s.firstSeen = now - 3 * day + 1
        #expect(reason(s) == "daysSinceFirstSeen")
        s = passing
        s.sessions = 2
        #expect(reason(s) == "sessions")
        s = passing
        s.lastNegativeAt = now - 24 * 3_600_000_000_000 + 1
        #expect(reason(s) == "recentNegative")
        s.lastNegativeAt = now - 24 * 3_600_000_000_000
        #expect(reason(s) == "allRulesPassed")
        #expect(reason(passing, version: true) == "alreadyPromptedForVersion")
        s = passing
        s.lastPromptAt = now - 90 * day + 1
        #expect(reason(s) == "daysSinceLastPrompt")
        s.lastPromptAt = now - 90 * day
        #expect(reason(s) == "allRulesPassed")
        #expect(reason(passing, lastYear: 3) == "promptsPerYear")
        #expect(reason(passing, lastYear: 2) == "allRulesPassed")
    }

    @Test func negativeSentimentAsksForFeedback() {
        var s = passing
        s.sentiment = -0.21
        s.sentimentSamples = 2
        let decision = rules.decide(s, appVersion: "1.0", promptedForVersion: false, promptsInLastYear: 0, now: now)
        #expect(decision.action == .feedback && decision.reason.hasPrefix("negativeSentiment"))
        s.sentiment = -0.19
        #expect(rules.decide(s, appVersion: "1.0", promptedForVersion: false, promptsInLastYear: 0, now: now).action == .prompt)
    }
}

typealias Harness = PluginHarness

extension PluginHarness {
    /// Auth, todos, payments, chat and rating wired as appd wires them, sharing one injected
    /// clock; rating's handlers started unless told not to.
    static func make(clock: TestClock = TestClock(), startRating: Bool = true, rules: RatingRules = RatingRules()) async throws -> PluginHarness {
        try await make(clock: clock, start: { startRating || !($0 is RatingPlugin) }) { clock in
            let now: @Sendable () -> WallTime = { clock.now }
            let auth = try AuthPlugin.testing(clock: clock) { $0.accessTokenLifetime = .seconds(400 * 86_400) }
            return [
                auth, TodosPlugin(clock: now), PaymentsPlugin(clock: now), try ChatPlugin(provider: EchoProvider(delay: .zero), clock: now), RatingPlugin(rules: rules, clock: now),
            ]
        }
    }

    var rating: RatingPlugin { plugin(RatingPlugin.self) }

    /// Runs rating's durable consumers until `body` is done.
    func withRatingRunning<T>(_ body: () async throws -> T) async throws -> T {
        let services = rating.services(context)
        let tasks = services.map { service in Task { try await service.run() } }
        defer { for task in tasks { task.cancel() } }
        return try await body()
    }

    func status(_ caller: Caller) async throws -> RatingInterface.Status.Reply {
        try await bus.send(RatingInterface.Status(), as: caller)
    }

    /// Waits until rating's consumer has applied every signal logged so far (on PostgreSQL an
    /// event reaches consumers a moment after its commit, once older transactions ended).
    func ratingCaughtUp() async throws {
        let newest = try await loggedEvents(limit: 10_000).last { RatingSignal.from($0) != nil }?.sequence ?? 0
        #expect(await eventually { (try? await DurableConsumer.position(of: "rating.signals", in: self.database)) ?? 0 >= newest })
    }

    /// Waits until rating has applied everything in the log.
    /// Records an issue where the status never gets there (a wrong expectation would otherwise
    /// only cost the test ten seconds).
    func settle(
        _ caller: Caller, sourceLocation: SourceLocation = #_sourceLocation, until done: (RatingInterface.Status.Reply) -> Bool
    ) async throws -> RatingInterface.Status.Reply {
        var status = try await status(caller)
        let settled = try await eventually {
            status = try await self.status(caller)
            return done(status)
        }
        #expect(settled, "rating's status never got there; it is \(status)", sourceLocation: sourceLocation)
        return status
    }

    func decide(_ caller: Caller, _ version: String = "1.0") async throws -> RatingInterface.Decide.Reply {
        try await bus.send(RatingInterface.Decide(appVersion: version), as: caller)
    }

    func completeTodo(_ caller: Caller, _ title: String) async throws {
        let todo = try await bus.send(TodosInterface.Add(title: title, notes: nil, dueAt: nil), as: caller).todo
        _ = try await bus.send(TodosInterface.Complete(id: todo.id), as: caller)
    }
}

@Suite(.cleansUp) struct RatingPluginTests {
    @Test func aUserWhoLikesTheAppOverSeveralDaysGetsPromptedThenNotAgain() async throws {
        let h = try await Harness.make()
        let suggested = try h.bus.subscribe("rating.promptSuggested")
        try await h.withRatingRunning {
            var ada = try await h.user("ada@example.com").caller  // sessions 1 and 2: signing up signs in
            try await h.completeTodo(ada, "first")
            _ = try await h.settle(ada) { $0.positiveSignals == 1 && $0.sessions == 2 }
            #expect(try await h.decide(ada).reason.hasPrefix("positiveSignals"))
            // Rating times a signal when it applies it: the first day's signals are applied on the first day.
            try await h.ratingCaughtUp()
            h.clock.advance(hours: 30)
            ada = try await h.signIn("ada@example.com").caller  // session 3
            try await h.completeTodo(ada, "second")
            let conversation = try await h.bus.send(ChatInterface.CreateConversation(title: nil), as: ada).conversation
            let stream = try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: "this is really helpful, thanks"), as: ada)
            var reply: ChatMessage?
            for try await part in stream { if let m = part.message { reply = m } }
            _ = try await h.bus.send(ChatInterface.Feedback(messageId: try #require(reply).id, rating: "up"), as: ada)
            _ = try await h.settle(ada) { $0.positiveSignals == 3 }
            #expect(try await h.decide(ada).reason.hasPrefix("daysSinceFirstSeen"))
            try await h.ratingCaughtUp()
            h.clock.advance(hours: 48)
            ada = try await h.signIn("ada@example.com").caller  // session 4, day 3
            let status = try await h.settle(ada) { $0.sessions == 4 }
            #expect(status.positiveSignals == 3 && status.score > 0)
            #expect(try await h.decide(ada) == .init(action: "prompt", reason: "allRulesPassed"))
            var iterator = suggested.makeAsyncIterator()
            #expect((try await iterator.next()?.json())?["userId"] != nil)

            _ = try await h.bus.send(RatingInterface.RecordOutcome(appVersion: "1.0", outcome: "shown"), as: ada)
            _ = try await h.bus.send(RatingInterface.RecordOutcome(appVersion: "1.0", outcome: "rated"), as: ada)
            #expect(try await h.decide(ada).action == "none")
            #expect(try await h.decide(ada, "1.1").reason.hasPrefix("positiveSignals"))
            #expect(try await h.status(ada).promptsLastYear == 1)
        }
    }

    @Test func aRecentNegativeSignalOrNegativeMessagesHoldThePromptBack() async throws {
        let h = try await Harness.make()
        try await h.withRatingRunning {
            var ada = try await h.user("ada@example.com").caller  // sessions 1 and 2: signing up signs in
            for i in 0..<3 { try await h.completeTodo(ada, "t\(i)") }
            // Rating times a signal when it applies it: the first day's signals are applied on the first day.
            try await h.ratingCaughtUp()
            h.clock.advance(hours: 72)
            ada = try await h.signIn("ada@example.com").caller
            ada = try await h.signIn("ada@example.com").caller
            _ = try await h.settle(ada) { $0.sessions == 4 && $0.positiveSignals == 3 }
            #expect(try await h.decide(ada).action == "prompt")
            // Two unhappy messages: ask for feedback instead.
            let conversation = try await h.bus.send(ChatInterface.CreateConversation(title: nil), as: ada).conversation
            for text in ["this is terrible and useless", "not good, the answer was wrong"] {
                let stream = try await h.bus.stream(ChatInterface.Send(conversationId: conversation.id, text: text), as: ada)
                for try await _ in stream {}
            }
            let status = try await h.settle(ada) { $0.score < -0.2 }
            #expect(status.score < -0.2)
            #expect(try await h.decide(ada).action == "feedback")
            // A thumbs-down is a negative signal: nothing for 24 hours.
            let history = try await h.bus.send(ChatInterface.History(conversationId: conversation.id, cursor: nil, limit: 10), as: ada).messages
            _ = try await h.bus.send(ChatInterface.Feedback(messageId: try #require(history.last).id, rating: "down"), as: ada)
            _ = try await h.settle(ada) { $0.negativeSignals == 1 }
            #expect(try await h.decide(ada).reason.hasPrefix("recentNegative"))
        }
    }

    @Test func eventsFromWhileRatingWasStoppedAreAppliedOnStartAndNeverTwice() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        for i in 0..<2 { try await h.completeTodo(ada, "while stopped \(i)") }
        // Not running yet: nothing applied.
        #expect(try await h.status(ada).positiveSignals == 0)
        try await h.withRatingRunning {
            let status = try await h.settle(ada) { $0.positiveSignals == 2 }
            // Sign-up opens a session, and the harness signs in once more: two sign-ins.
            #expect(status.positiveSignals == 2 && status.sessions == 2)
        }
        // Forget the consumer's position: everything is delivered again, and skipped.
        _ = try await h.database.write { try $0.execute("DELETE FROM appd_consumers WHERE name = 'rating.signals'") }
        try await h.withRatingRunning {
            try await h.completeTodo(ada, "after")
            let status = try await h.settle(ada) { $0.positiveSignals >= 3 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await h.status(ada).positiveSignals == 3 && status.sessions == 2)
        }
    }

    @Test func validationAndErasure() async throws {
        let h = try await Harness.make()
        try await h.withRatingRunning {
            let ada = try await h.user("ada@example.com").caller
            await #expect(throws: RatingError.self) { _ = try await h.decide(ada, " ") }
            await #expect(throws: RatingError.self) { _ = try await h.bus.send(RatingInterface.RecordOutcome(appVersion: "1", outcome: "loved"), as: ada) }
            _ = try await h.settle(ada) { $0.sessions == 2 }  // signing up signs in
            _ = try await h.bus.send(RatingInterface.RecordOutcome(appVersion: "1", outcome: "shown"), as: ada)
            _ = try await h.bus.send(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada)
            #expect(try await eventually { try await h.count("SELECT (SELECT COUNT(*) FROM rating_users) + (SELECT COUNT(*) FROM rating_prompts) AS n") == 0 })
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// The rating tables: per-user state and the prompt history. Signals are applied in one
/// transaction each, skipping events already applied (the per-user sequence), so redelivery
/// never double-counts.
struct RatingRepository: Sendable {
    let database: any Database

    static let promptOutcomes = "('shown', 'dismissed', 'rated')"

    static func load(_ tx: any Transaction, _ user: String) throws -> RatingState? {
        guard let row = try tx.query("SELECT * FROM rating_users WHERE user_id = ?", [.text(user)]).first, let first = row.integer("first_seen") else {
            return nil
        }
        return RatingState(
            firstSeen: first, sessions: Int(row.integer("sessions") ?? 0), positives: Int(row.integer("positives") ?? 0),
            negatives: Int(row.integer("negatives") ?? 0), positivesSincePrompt: Int(row.integer("positives_since_prompt") ?? 0),
            lastNegativeAt: row.integer("last_negative_at"), lastPromptAt: row.integer("last_prompt_at"), sentiment: row.real("sentiment") ?? 0,
            sentimentSamples: Int(row.integer("sentiment_samples") ?? 0), suggested: row.integer("suggested") == 1,
            lastSequence: row.integer("last_seq") ?? 0)
    }

    static func save(_ tx: any Transaction, _ user: String, _ s: RatingState) throws {
        try tx.execute(
            """
            INSERT INTO rating_users (user_id, first_seen, sessions, positives, negatives, positives_since_prompt, last_negative_at,
              last_prompt_at, sentiment, sentiment_samples, suggested, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user_id) DO UPDATE SET first_seen = excluded.first_seen, sessions = excluded.sessions,
              positives = excluded.positives, negatives = excluded.negatives, positives_since_prompt = excluded.positives_since_prompt,
              last_negative_at = excluded.last_negative_at, last_prompt_at = excluded.last_prompt_at, sentiment = excluded.sentiment,
              sentiment_samples = excluded.sentiment_samples, suggested = excluded.suggested, last_seq = excluded.last_seq
            """,
            [
                .text(user), .integer(s.firstSeen), .integer(Int64(s.sessions)), .integer(Int64(s.positives)), .integer(Int64(s.negatives)),
                .integer(Int64(s.positivesSincePrompt)), s.lastNegativeAt.map { .integer($0) } ?? .null, s.lastPromptAt.map { .integer($0) } ?? .null,
                .real(s.sentiment), .integer(Int64(s.sentimentSamples)), .integer(s.suggested ? 1 : 0), .integer(s.lastSequence),
            ])
    }

    static func promptHistory(_ tx: any Transaction, _ user: String, version: String?, now: Int64) throws -> (forVersion: Bool, lastYear: Int) {
        let year = now - 365 * RatingRules.day
        let lastYear =
            try tx.query(
                "SELECT COUNT(DISTINCT app_version) AS n FROM rating_prompts WHERE user_id = ? AND outcome IN \(promptOutcomes) AND at > ?",
                [.text(user), .integer(year)]
            ).first?.integer("n") ?? 0
        var forVersion = false
        if let version {
            forVersion = try !tx.query(
                "SELECT 1 FROM rating_prompts WHERE user_id = ? AND app_version = ? AND outcome IN \(promptOutcomes) LIMIT 1", [.text(user), .text(version)]
            ).isEmpty
        }
        return (forVersion, Int(lastYear))
    }

    /// Applies one signal; publishes `rating.promptSuggested` when the user's decision turns to prompt.
    func apply(_ signal: RatingSignal, user: String, sequence: Int64, rules: RatingRules, now: Int64, causedBy cause: (any Cause)?) async throws {
        try await database.write { tx in
            var state = try Self.load(tx, user) ?? RatingState(firstSeen: now)
            guard sequence > state.lastSequence else { return }  // already applied
            state.lastSequence = sequence
            switch signal {
            case .positive:
                state.positives += 1
                state.positivesSincePrompt += 1
            case .negative:
                state.negatives += 1
                state.lastNegativeAt = now
            case .session:
                state.sessions += 1
            case .message(let score):
                // An exponential average of recent messages: the newest weighs a third.
                state.sentiment = state.sentimentSamples == 0 ? score : state.sentiment * 2 / 3 + score / 3
                state.sentimentSamples += 1
            case .seen:
                break
            }
            let history = try Self.promptHistory(tx, user, version: nil, now: now)
            let decision = rules.decide(state, appVersion: nil, promptedForVersion: false, promptsInLastYear: history.lastYear, now: now)
            if decision.action == .prompt && !state.suggested {
                state.suggested = true
                try tx.append(RatingPromptSuggested(userId: user, reason: decision.reason), causedBy: cause)
            }
            try Self.save(tx, user, state)
        }
    }

    func decide(user: String, appVersion: String, rules: RatingRules, now: Int64) async throws -> RatingDecision {
        try await database.read { tx in
            let state = try Self.load(tx, user)
            let history = try Self.promptHistory(tx, user, version: appVersion, now: now)
            return rules.decide(state, appVersion: appVersion, promptedForVersion: history.forVersion, promptsInLastYear: history.lastYear, now: now)
        }
    }

    /// Records what happened to a prompt. The first of shown/dismissed/rated for a version is
    /// the prompt itself: it starts the counts over.
    func record(user: String, appVersion: String, outcome: String, now: Int64) async throws {
        try await database.write { tx in
            let before = try Self.promptHistory(tx, user, version: appVersion, now: now)
            try tx.execute(
                "INSERT INTO rating_prompts (user_id, app_version, outcome, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(user), .text(appVersion), .text(outcome), .integer(now)])
            guard outcome != "feedbackSent", !before.forVersion else { return }
            var state = try Self.load(tx, user) ?? RatingState(firstSeen: now)
            state.lastPromptAt = now
            state.positivesSincePrompt = 0
            state.suggested = false
            try Self.save(tx, user, state)
        }
    }

    func status(user: String, now: Int64) async throws -> (RatingState?, Int) {
        try await database.read { tx in (try Self.load(tx, user), try Self.promptHistory(tx, user, version: nil, now: now).lastYear) }
    }

    func erase(_ user: String) async throws {
        try await database.write { tx in
            try tx.execute("DELETE FROM rating_users WHERE user_id = ?", [.text(user)])
            try tx.execute("DELETE FROM rating_prompts WHERE user_id = ?", [.text(user)])
        }
    }
}

/// What one event means to rating.
enum RatingSignal: Sendable, Equatable {
    case positive, negative, session, seen
    case message(score: Double)

    /// The user an event is about and the signal it carries, if any.
    static func from(_ event: BusEvent) -> (user: String, signal: RatingSignal)? {
        if let e = event.decode(as: TodoCompleted.self) { return (e.userId, .positive) }
        if let e = event.decode(as: ChatFeedbackGiven.self) {
            return e.rating == "up" ? (e.userId, .positive) : e.rating == "down" ? (e.userId, .negative) : nil
        }
        if let e = event.decode(as: EntitlementChanged.self) { return e.change == "granted" ? (e.userId, .positive) : nil }
        if let e = event.decode(as: ChatReplyFailed.self) { return (e.userId, .negative) }
        if let e = event.decode(as: PurchaseFailed.self) { return (e.userId, .negative) }
        if let e = event.decode(as: SignedIn.self) { return (e.userId, .session) }
        if let e = event.decode(as: UserSignedUp.self) { return (e.userId, .seen) }
        if let e = event.decode(as: ChatMessageSent.self) { return (e.userId, .message(score: SentimentScorer.score(e.text))) }
        return nil
    }

    /// The event types rating listens to.
    static let events: [any Event.Type] = [
        TodoCompleted.self, ChatFeedbackGiven.self, EntitlementChanged.self, ChatReplyFailed.self, PurchaseFailed.self, SignedIn.self,
        UserSignedUp.self, ChatMessageSent.self,
    ]
}

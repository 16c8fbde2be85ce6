// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage
import EventDelivery

/// Rating prompts from bus signals (`io.appd.Rating`): a durable consumer of other plugins'
/// events, the rules, and erasure of a deleted account's rating state.
public struct RatingPlugin: Plugin {
    public let manifest = PluginManifest(
        name: "rating", version: "0.1.0", dependencies: ["auth"], interface: RatingInterface.idl, events: RatingEvents.all,
        consumes: RatingSignal.events + [AccountDeleted.self],
        configKeys: [
            "ratingMinPositiveSignals", "ratingMinDaysSinceFirstSeen", "ratingMinSessions", "ratingNegativeCooldownHours",
            "ratingMinDaysBetweenPrompts", "ratingMaxPromptsPerYear",
        ])
    public var migrations: [Migration] { RatingMigrations.all }

    let rules: RatingRules
    let clock: @Sendable () -> WallTime

    public init(rules: RatingRules = RatingRules(), clock: @escaping @Sendable () -> WallTime = { .now() }) {
        self.rules = rules
        self.clock = clock
    }

    public func start(_ context: PluginContext) async throws {
        let repository = RatingRepository(database: context.database)
        let rules = self.rules, clock = self.clock
        context.handlers.handle(RatingInterface.Decide.self) { c, e in
            let decision = try await repository.decide(user: try user(e), appVersion: try Self.version(c.appVersion), rules: rules, now: clock().nanosecondsSinceEpoch)
            return .init(action: decision.action.rawValue, reason: decision.reason)
        }
        context.handlers.handle(RatingInterface.RecordOutcome.self) { c, e in
            guard ["shown", "dismissed", "rated", "feedbackSent"].contains(c.outcome) else {
                throw RatingError.validationFailed(field: "outcome", reason: "is shown, dismissed, rated or feedbackSent")
            }
            try await repository.record(user: try user(e), appVersion: try Self.version(c.appVersion), outcome: c.outcome, now: clock().nanosecondsSinceEpoch)
            return Empty()
        }
        context.handlers.handle(RatingInterface.Status.self) { _, e in
            let (state, promptsLastYear) = try await repository.status(user: try user(e), now: clock().nanosecondsSinceEpoch)
            func time(_ t: Int64?) -> String? { t.map { WallTime(nanosecondsSinceEpoch: $0).rfc3339 } }
            return .init(
                score: state?.sentiment ?? 0, positiveSignals: state?.positives ?? 0, negativeSignals: state?.negatives ?? 0,
                positiveSinceLastPrompt: state?.positivesSincePrompt ?? 0, sessions: state?.sessions ?? 0, firstSeen: time(state?.firstSeen),
                lastNegative: time(state?.lastNegativeAt), lastPrompt: time(state?.lastPromptAt), promptsLastYear: promptsLastYear)
        }
    }

    static func version(_ raw: String) throws(RatingError) -> String {
        let version = raw.trimmingWhitespace()
        guard !version.isEmpty, TextLimit(characters: 64).violation(of: version) == nil, !version.containsControlCharacters else {
            throw RatingError.validationFailed(field: "appVersion", reason: "needs 1 to 64 characters, e.g. 2.4.1")
        }
        return version
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let repository = RatingRepository(database: context.database)
        let rules = self.rules, clock = self.clock
        let signals: TopicFilter
        do {
            signals = try TopicFilter(events: RatingSignal.events)
        } catch {
            return [FailedService(name: "rating.signals", error: error)]
        }
        var services: [any Service] = [
            // Signals are timed when rating applies them (at once while it runs; on catch-up after downtime).
            DurableConsumer(name: "rating.signals", filter: signals, log: context.eventLog, bus: context.bus, logger: context.logger) { event in
                guard let sequence = event.sequence, let (user, signal) = RatingSignal.from(event) else { return }
                try await repository.apply(signal, user: user, sequence: sequence, rules: rules, now: clock().nanosecondsSinceEpoch, causedBy: event)
            }
        ]
        do {
            services.append(
                try DurableConsumer(name: "rating.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in try await repository.erase(deleted.userId)
                })
        } catch {
            services.append(FailedService(name: "rating.accountDeleted", error: error))
        }
        return services
    }

}

private func user(_ envelope: Envelope) throws(RatingError) -> String {
    try envelope.signedInUser(or: RatingError.validationFailed(field: "session", reason: "sign in first"))
}

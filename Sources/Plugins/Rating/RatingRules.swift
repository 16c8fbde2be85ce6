// SPDX-License-Identifier: Apache-2.0
/// When to ask for a rating (all configurable). Defaults: at least 3 positive signals since the
/// last prompt, 3 days since first seen, 3 sessions, no negative signal in the last 24 hours,
/// not yet prompted for this app version, 90 days since the last prompt, at most 3 prompts in
/// any 365 days; recent sentiment below `negativeSentiment` asks for feedback instead.
public struct RatingRules: Sendable, Equatable {
    public var minPositiveSignals = 3
    public var minDaysSinceFirstSeen = 3
    public var minSessions = 3
    public var negativeCooldownHours = 24
    public var minDaysBetweenPrompts = 90
    public var maxPromptsPerYear = 3
    /// The recent-sentiment average below which `feedback` is answered instead of `prompt`.
    public var negativeSentiment = -0.2
    public init() {}
}

/// What rating knows about one user.
struct RatingState: Sendable, Equatable {
    var firstSeen: Int64
    var sessions = 0
    var positives = 0
    var negatives = 0
    var positivesSincePrompt = 0
    var lastNegativeAt: Int64?
    var lastPromptAt: Int64?
    /// Average sentiment of the recent messages (exponential, newest weighs 1/3).
    var sentiment = 0.0
    var sentimentSamples = 0
    /// Whether `rating.promptSuggested` was published since the last prompt.
    var suggested = false
    /// The last event sequence applied (redelivered events are skipped).
    var lastSequence: Int64 = 0
}

/// A decision and the rule that made it.
public struct RatingDecision: Sendable, Equatable {
    public enum Action: String, Sendable { case prompt, feedback, none }
    public var action: Action
    public var reason: String
}

extension RatingRules {
    static let day: Int64 = 86_400_000_000_000

    /// Applies the rules in order; the first that fails names the reason. `promptedVersions`
    /// and `promptsInLastYear` come from the prompt history; a nil `appVersion` skips the
    /// version rule (used to decide when to publish `rating.promptSuggested`).
    func decide(_ state: RatingState?, appVersion: String?, promptedForVersion: Bool, promptsInLastYear: Int, now: Int64) -> RatingDecision {
        guard let state else { return RatingDecision(action: .none, reason: "no signals yet") }
        if state.positivesSincePrompt < minPositiveSignals {
            return .init(action: .none, reason: "positiveSignals: \(state.positivesSincePrompt) of \(minPositiveSignals) since the last prompt")
        }
        let days = (now - state.firstSeen) / Self.day
        if now - state.firstSeen < Int64(minDaysSinceFirstSeen) * Self.day {
            return .init(action: .none, reason: "daysSinceFirstSeen: \(days) of \(minDaysSinceFirstSeen)")
        }
        if state.sessions < minSessions {
            return .init(action: .none, reason: "sessions: \(state.sessions) of \(minSessions)")
        }
        if let negative = state.lastNegativeAt, now - negative < Int64(negativeCooldownHours) * 3_600_000_000_000 {
            return .init(action: .none, reason: "recentNegative: a negative signal in the last \(negativeCooldownHours) hours")
        }
        if appVersion != nil, promptedForVersion {
            return .init(action: .none, reason: "alreadyPromptedForVersion: already asked in \(appVersion ?? "")")
        }
        if let last = state.lastPromptAt, now - last < Int64(minDaysBetweenPrompts) * Self.day {
            return .init(action: .none, reason: "daysSinceLastPrompt: \((now - last) / Self.day) of \(minDaysBetweenPrompts)")
        }
        if promptsInLastYear >= maxPromptsPerYear {
            return .init(action: .none, reason: "promptsPerYear: \(promptsInLastYear) of at most \(maxPromptsPerYear) in 365 days")
        }
        if state.sentimentSamples > 0 && state.sentiment < negativeSentiment {
            return .init(action: .feedback, reason: "negativeSentiment: recent messages average \(Self.rounded(state.sentiment))")
        }
        return .init(action: .prompt, reason: "allRulesPassed")
    }

    static func rounded(_ value: Double) -> String {
        let scaled = (value * 100).rounded() / 100
        return "\(scaled)"
    }
}

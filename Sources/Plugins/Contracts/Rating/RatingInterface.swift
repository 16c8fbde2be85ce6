// SPDX-License-Identifier: Apache-2.0
import BusCore

/// `io.appd.Rating`: whether now is a good moment to ask the signed-in user for a rating.
public enum RatingInterface {
    public static let idl = """
        # Rating prompts. Rating decides from signals it collects off the bus (completed todos,
        # feedback on replies, purchases, failures, sign-ins, the sentiment of chat messages); it never
        # calls other plugins. Every method needs a signed-in user.
        interface io.appd.Rating

        # prompt: ask for an app-store rating now; feedback: ask for private feedback instead (recent
        # messages are negative); none: not now. reason names the rule that decided.
        method Decide(appVersion: string) -> (action: (prompt, feedback, none), reason: string)

        # What happened: shown, dismissed or rated count as the prompt for this app version.
        method RecordOutcome(appVersion: string, outcome: (shown, dismissed, rated, feedbackSent)) -> ()

        # score: recent sentiment, -1 to 1.
        method Status() -> (score: float, positiveSignals: int, negativeSignals: int, positiveSinceLastPrompt: int, sessions: int, firstSeen: ?string, lastNegative: \
        ?string, lastPrompt: ?string, promptsLastYear: int)

        # category: invalid
        error ValidationFailed (field: string, reason: string)

        """

    /// Every method of the IDL as its command type (`ContractsTests` checks the two agree).
    public static let commands: [any Command.Type] = [Decide.self, RecordOutcome.self, Status.self]
    public static let streams: [any StreamingCommand.Type] = []
    public typealias Errors = RatingError
    /// The interface's name, e.g. `io.appd.Todos`.
    public static var name: String { Errors.interface }

    public struct Decide: Command {
        public static let method = "io.appd.Rating.Decide"
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var action: String
            public var reason: String
            public init(action: String, reason: String) {
                self.action = action
                self.reason = reason
            }
        }
        public var appVersion: String
        public init(appVersion: String) {
            self.appVersion = appVersion
        }
    }
    public struct RecordOutcome: Command {
        public static let method = "io.appd.Rating.RecordOutcome"
        public static var requirements: [Requirement] { [.session, .idempotent] }
        public typealias Reply = Empty
        public var appVersion: String
        public var outcome: String
        public init(appVersion: String, outcome: String) {
            self.appVersion = appVersion
            self.outcome = outcome
        }
    }
    public struct Status: Command {
        public static let method = "io.appd.Rating.Status"
        public static let readsOnly = true
        public static var requirements: [Requirement] { [.session] }
        public struct Reply: Codable, Sendable, Equatable {
            public var score: Double
            public var positiveSignals: Int
            public var negativeSignals: Int
            public var positiveSinceLastPrompt: Int
            public var sessions: Int
            public var firstSeen: String?
            public var lastNegative: String?
            public var lastPrompt: String?
            public var promptsLastYear: Int
            public init(
                score: Double, positiveSignals: Int, negativeSignals: Int, positiveSinceLastPrompt: Int, sessions: Int, firstSeen: String? = nil, lastNegative: String? = nil,
                lastPrompt: String? = nil, promptsLastYear: Int
            ) {
                self.score = score
                self.positiveSignals = positiveSignals
                self.negativeSignals = negativeSignals
                self.positiveSinceLastPrompt = positiveSinceLastPrompt
                self.sessions = sessions
                self.firstSeen = firstSeen
                self.lastNegative = lastNegative
                self.lastPrompt = lastPrompt
                self.promptsLastYear = promptsLastYear
            }
        }
        public init() {}
    }
}

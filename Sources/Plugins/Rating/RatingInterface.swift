import Bus

/// `io.appd.Rating`: whether now is a good moment to ask the signed-in user for a rating.
enum RatingInterface {
    static let idl = """
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
        method Status() -> (score: float, positiveSignals: int, negativeSignals: int, positiveSinceLastPrompt: int, sessions: int, firstSeen: ?string, lastNegative: ?string, lastPrompt: ?string, promptsLastYear: int)

        error ValidationFailed (field: string, reason: string)

        """

    struct Decide: Command {
        static let method = "io.appd.Rating.Decide"
        static var requirements: [Requirement] { [.session] }
        struct Reply: Codable, Sendable, Equatable {
            var action: String
            var reason: String
        }
        var appVersion: String
    }
    struct RecordOutcome: Command {
        static let method = "io.appd.Rating.RecordOutcome"
        static var requirements: [Requirement] { [.session, .idempotent] }
        typealias Reply = Empty
        var appVersion: String
        var outcome: String
    }
    struct Status: Command {
        static let method = "io.appd.Rating.Status"
        static var requirements: [Requirement] { [.session] }
        struct Reply: Codable, Sendable, Equatable {
            var score: Double
            var positiveSignals: Int
            var negativeSignals: Int
            var positiveSinceLastPrompt: Int
            var sessions: Int
            var firstSeen: String?
            var lastNegative: String?
            var lastPrompt: String?
            var promptsLastYear: Int
        }
    }
}

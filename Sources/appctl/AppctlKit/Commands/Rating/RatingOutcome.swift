// SPDX-License-Identifier: Apache-2.0
import Contracts

struct RatingOutcome: Leaf {
    static let path = ["rating", "outcome"]
    static let abstract = "Record what happened to a prompt."
    @Argument("outcome", "shown, dismissed, rated or feedbackSent.") var outcome: String?
    @Option("--app-version", "v", "The app version the prompt is for.") var appVersion: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let outcome else { throw .usage("rating outcome needs one of shown, dismissed, rated, feedbackSent", command: Self.command) }
        guard let appVersion else { throw .usage("rating outcome needs --app-version", command: Self.command) }
        let reply = try context.json(RatingInterface.RecordOutcome(appVersion: appVersion, outcome: outcome))
        if context.options.json { context.output.reply(reply) } else { print("recorded \(outcome) for \(appVersion)") }
        return ExitCode.ok
    }
}

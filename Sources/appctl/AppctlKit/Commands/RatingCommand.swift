import BusCore
import Contracts
import Varlink

/// `appctl rating status | decide --app-version X | outcome OUTCOME --app-version X`. Any other
/// word goes to the commands derived from `io.appd.Rating`.
enum RatingCommand {
    static let command = Builtin(
        name: "rating", abstract: "Whether to ask for an app-store rating now: status, decide, outcome.",
        usage: "rating <status | decide --app-version X | outcome (shown|dismissed|rated|feedbackSent) --app-version X>",
        discussion: "decide answers prompt, feedback or none, with the rule that decided. outcome records what happened to a prompt. Needs 'appctl login'.",
        options: [RatingCommand.appVersion]
    ) { arguments, context throws(AppctlError) in
        guard arguments.first == "outcome" else { return try DerivedCommand.run(interfaceWord: "rating", arguments, options: context.options) }
        let flags = try Flags(Array(arguments.dropFirst()), accepting: [RatingCommand.appVersion], command: "rating")
        guard flags.positionals.count == 1, let outcome = flags.positionals.first else {
            throw .usage("rating outcome needs one of shown, dismissed, rated, feedbackSent", command: "rating")
        }
        guard let version = flags.value("--app-version") else { throw .usage("rating outcome needs --app-version", command: "rating") }
        let reply = try context.json(RatingInterface.RecordOutcome(appVersion: version, outcome: outcome))
        if context.options.json { context.output.reply(reply) } else { print("recorded \(outcome) for \(version)") }
        return ExitCode.ok
    }
}

extension RatingCommand {
    static let appVersion = CommandOption("--app-version", value: "v", "The app version the prompt is for.")
}

// SPDX-License-Identifier: Apache-2.0
/// `appctl rating outcome OUTCOME --app-version X`; `status` and `decide` are the commands
/// derived from `io.appd.Rating`, as is any other word.
enum RatingGroup {
    static let group = CommandGroup(
        name: "rating", abstract: "Whether to ask for an app-store rating now: status, decide, outcome.",
        discussion: "decide (--app-version X) answers prompt, feedback or none, with the rule that decided. outcome records what happened to a prompt. Needs 'appctl login'.",
        leaves: [RatingOutcome.self], derived: true)
}

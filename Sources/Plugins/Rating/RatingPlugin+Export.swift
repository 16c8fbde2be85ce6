// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

extension RatingPlugin {
    /// What the rating rules know of the user, and the prompts shown.
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [
                UserDataQuery(
                    "state",
                    "SELECT first_seen, sessions, positives, negatives, positives_since_prompt, last_negative_at, last_prompt_at, sentiment, suggested FROM rating_users "
                        + "WHERE user_id = ?",
                    times: ["first_seen"]),
                UserDataQuery("prompts", "SELECT app_version, outcome, at FROM rating_prompts WHERE user_id = ? ORDER BY seq"),
            ], user: user, in: context.database)
    }
}

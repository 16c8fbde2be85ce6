// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

extension ChatPlugin {
    /// The user's conversations, every message in them (theirs and the assistant's replies), and
    /// their memories.
    public func exportUserData(_ user: String, _ context: PluginContext) async throws -> JSONValue? {
        try await UserDataQuery.run(
            [
                UserDataQuery("conversations", "SELECT id, title, created_at, updated_at, version, temporary FROM chat_conversations WHERE owner = ? ORDER BY seq"),
                UserDataQuery(
                    "messages",
                    "SELECT id, conversation_id, role, text, status, error, prompt_tokens, completion_tokens, feedback, model, created_at FROM chat_messages WHERE owner "
                        + "= ? ORDER BY seq"
                ),
                UserDataQuery("memories", "SELECT id, text, conversation_id, message_id, model, created_at, updated_at FROM chat_memories WHERE owner = ? ORDER BY seq"),
            ], user: user, in: context.database)
    }
}

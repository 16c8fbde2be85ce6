// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ChatList: Leaf {
    static let path = ["chat", "ls"]
    static let abstract = "List your conversations, most recent first; with words, those whose title has them."
    @Arguments("query", optional: true, "Words the title must contain.") var query: [String]

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let list = try context.call(ChatInterface.ListConversations(query: query.isEmpty ? nil : query.joined(separator: " "), limit: 200)).conversations
        let rows = list.compactMap { (try? JSONValue(encoding: $0))?.objectValue }
        if context.options.json {
            for conversation in rows { print(JSONValue.object(conversation).jsonText) }
        } else if list.isEmpty {
            print("no conversations")
        } else {
            print(Output.table(rows, order: ["id", "title", "updatedAt"]), terminator: "")
        }
        return ExitCode.ok
    }
}

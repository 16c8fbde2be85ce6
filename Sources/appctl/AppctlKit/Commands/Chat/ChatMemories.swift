// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ChatMemories: Leaf {
    static let path = ["chat", "memories"]
    static let abstract = "List what chat remembers about you, newest first."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let reply = try context.call(ChatInterface.ListMemories())
        let rows = reply.memories.compactMap { (try? JSONValue(encoding: $0))?.objectValue }
        if context.options.json {
            for memory in rows { print(JSONValue.object(memory).jsonText) }
            return ExitCode.ok
        }
        if !reply.enabled { print("memory is off ('appctl settings set chat.memory true' turns it on)") }
        if rows.isEmpty {
            print("no memories")
        } else {
            let shown = rows.map { $0.filter { ["id", "text", "updatedAt"].contains($0.key) } }
            print(Output.table(shown, order: ["id", "text", "updatedAt"]), terminator: "")
        }
        return ExitCode.ok
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ChatModelsList: Leaf {
    static let path = ["chat", "models"]
    static let abstract = "List the models a message may ask for, and which you may use."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let reply = try context.call(ChatInterface.Models())
        for model in reply.models {
            if context.options.json {
                var row = (try? JSONValue(encoding: model))?.objectValue ?? [:]
                row["usable"] = .bool(reply.usable.contains(model.name))
                print(JSONValue.object(row).jsonText)
            } else {
                let needs = model.entitlement.map { " (needs \($0))" } ?? ""
                let mark = reply.usable.contains(model.name) ? "" : " [not usable]"
                print("\(model.name)\(model.default ? " (default)" : "")\(needs)\(mark)")
            }
        }
        return ExitCode.ok
    }
}

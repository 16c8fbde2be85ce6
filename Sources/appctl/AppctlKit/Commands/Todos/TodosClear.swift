// SPDX-License-Identifier: Apache-2.0
import Contracts

struct TodosClear: Leaf {
    static let path = ["todos", "clear"]
    static let abstract = "Delete every done todo."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        if context.options.json {
            context.output.reply(try context.json(TodosInterface.ClearCompleted()))
        } else {
            print("deleted \(try context.call(TodosInterface.ClearCompleted()).deleted) completed todo(s)")
        }
        return ExitCode.ok
    }
}

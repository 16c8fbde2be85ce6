// SPDX-License-Identifier: Apache-2.0
import Contracts

struct FilesRemove: Leaf {
    static let path = ["files", "rm"]
    static let abstract = "Delete a file (one that goes with an item, such as your avatar, goes with it instead)."
    @Argument("id", "The file's id.") var id: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("files rm needs one file id", command: Self.command) }
        let reply = try context.json(FilesInterface.Delete(id: id))
        if context.options.json { context.output.reply(reply) } else { print("deleted") }
        return ExitCode.ok
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct FilesList: Leaf {
    static let path = ["files", "ls"]
    static let abstract = "List your files, newest first, and how much of your quota they use."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        var files: [StoredFile] = []
        var cursor: String?
        repeat {
            let page = try context.call(FilesInterface.List(cursor: cursor, limit: 200))
            files += page.files
            cursor = page.nextCursor
        } while cursor != nil
        let rows = files.compactMap { (try? JSONValue(encoding: $0))?.objectValue }
        let columns = ["id", "name", "contentType", "bytes", "usedBy", "createdAt"]
        if context.options.json {
            for file in rows { print(JSONValue.object(file).jsonText) }
            return ExitCode.ok
        }
        if files.isEmpty { print("no files") } else { print(Output.table(rows.map { $0.filter { columns.contains($0.key) } }, order: columns), terminator: "") }
        let usage = try context.call(FilesInterface.Usage())
        print("\(usage.files) files, \(FilesGroup.mebibytes(usage.bytes)) of \(FilesGroup.mebibytes(usage.quotaBytes)) MiB")
        return ExitCode.ok
    }
}

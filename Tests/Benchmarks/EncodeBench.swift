// SPDX-License-Identifier: Apache-2.0
import Bus

/// A reply shaped like `Todos.List`'s: five items of nine fields, three of them optional.
struct ReplyItem: Encodable {
    var id: String
    var title: String
    var notes: String?
    var done: Bool
    var dueAt: String?
    var createdAt: String
    var updatedAt: String
    var completedAt: String?
    var version: Int64
}

struct ReplyPage: Encodable {
    var todos: [ReplyItem]
    var nextCursor: String?
}

/// Microseconds per reply: through the value tree and its writer, and straight to bytes.
func replyEncoding(replies: Int) throws -> (tree: Double, bytes: Double) {
    var items: [ReplyItem] = []
    for i in 0..<5 {
        let stamp = "2026-12-03T06:00:00.000Z"
        let none: String? = nil
        var item = ReplyItem(id: "t_0Qm3xY9a", title: "todo", notes: none, done: false, dueAt: none, createdAt: stamp, updatedAt: stamp, completedAt: none, version: 1)
        item.id += String(i) + "bcdefghijk"
        item.title += " " + String(i)
        item.notes = i % 2 == 0 ? "some notes" : none
        item.done = i % 3 == 0
        item.version = Int64(i + 1)
        items.append(item)
    }
    let page = ReplyPage(todos: items, nextCursor: nil)
    var sink = 0
    let treeStart = ContinuousClock.now
    for _ in 0..<replies { sink &+= JSONWriter.bytes(try JSONValue(encoding: page)).count }
    let tree = seconds(ContinuousClock.now - treeStart) * 1e6 / Double(replies)
    let bytesStart = ContinuousClock.now
    for _ in 0..<replies { sink &+= try JSONBytesEncoder.encode(page).count }
    let bytes = seconds(ContinuousClock.now - bytesStart) * 1e6 / Double(replies)
    precondition(sink > 0)
    return (tree, bytes)
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// Renders replies for people (key: value, tables) or scripts (one JSON object per line). Text
/// for people has its control characters escaped (a display name must not drive the terminal);
/// JSON escapes them by itself.
struct Output {
    let json: Bool

    /// Prints one reply's parameters. `order` lists keys in the IDL's order when known.
    func reply(_ parameters: JSONValue, order: [String] = []) {
        if json {
            print(parameters.jsonText)
            return
        }
        guard case .object(let members) = parameters else {
            print(Self.scalar(parameters))
            return
        }
        print(Self.render(members, order: order, indent: ""), terminator: "")
    }

    /// Column orders of tables that appear in more than one command, so they read the same
    /// everywhere (`status` shows the plugins as `plugins` does).
    static let columns: [String: [String]] = [
        "plugins": ["name", "version", "kind", "state", "pid", "restarts", "interfaces", "sandbox", "grants", "lastError"],
        "consumers": ["name", "position", "lag"],
    ]

    static func orderedKeys(_ members: [String: JSONValue], _ order: [String]) -> [String] {
        let known = order.filter { members[$0] != nil }
        return known + members.keys.filter { !order.contains($0) }.sorted()
    }

    static func render(_ members: [String: JSONValue], order: [String], indent: String) -> String {
        var out = ""
        let keys = orderedKeys(members, order)
        let width = keys.map(\.count).max() ?? 0
        for key in keys {
            guard let value = members[key] else { continue }
            let label = indent + key + ":" + String(repeating: " ", count: width - key.count)
            switch value {
            case .object(let nested) where !nested.isEmpty:
                out += "\(indent)\(key):\n" + render(nested, order: [], indent: indent + "  ")
            case .array(let rows) where !rows.isEmpty && rows.allSatisfy({ $0.objectValue != nil }):
                out += "\(indent)\(key):\n" + table(rows.compactMap(\.objectValue), order: columns[key] ?? [], indent: indent + "  ")
            default:
                out += "\(label) \(scalar(value))\n"
            }
        }
        return out
    }

    /// Rows of objects as an aligned table with upper-case headers.
    static func table(_ rows: [[String: JSONValue]], order: [String] = [], indent: String = "") -> String {
        var columns = order.filter { key in rows.contains { $0[key] != nil } }
        for row in rows { for key in row.keys.sorted() where !columns.contains(key) { columns.append(key) } }
        let cells = rows.map { row in columns.map { row[$0].map(scalar) ?? "" } }
        let widths = columns.indices.map { i in max(columns[i].count, cells.map { $0[i].count }.max() ?? 0) }
        func line(_ values: [String]) -> String {
            indent
                + zip(values, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }
                .joined(separator: "  ").trimmingTrailingSpaces() + "\n"
        }
        return line(columns.map { $0.uppercased() }) + cells.map(line).joined()
    }

    /// `3d 4h 5m 6s`, `5m 6s`, `6.2s`: a duration for people.
    static func duration(_ seconds: Double) -> String {
        guard seconds >= 60 else { return "\((max(0, seconds) * 10).rounded() / 10)s" }
        var left = Int(seconds)
        var parts: [String] = []
        for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] where left >= size || !parts.isEmpty {
            parts.append("\(left / size)\(unit)")
            left %= size
        }
        parts.append("\(left)s")
        return parts.joined(separator: " ")
    }

    static func scalar(_ value: JSONValue) -> String {
        switch value {
        case .null: "-"
        case .bool(let b): b ? "yes" : "no"
        case .int(let i): String(i)
        case .double(let d): d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .string(let s): s.escapingControlCharacters()
        case .array(let a): a.isEmpty ? "(none)" : a.map(scalar).joined(separator: ", ")
        case .object: value.jsonText
        }
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

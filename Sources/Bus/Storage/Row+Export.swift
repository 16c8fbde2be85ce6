// SPDX-License-Identifier: Apache-2.0
import BusCore

extension Row {
    /// The row as a JSON object for a person to read (a user's data export): each column but
    /// `omitting`, times (columns named `at` or ending in `_at`, and `times`) as RFC 3339,
    /// blobs as their size only.
    public func exportJSON(omitting: Set<String> = [], times: Set<String> = []) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (column, value) in zip(columns, values) where !omitting.contains(column) {
            let isTime = column == "at" || column.hasSuffix("_at") || times.contains(column)
            switch value {
            case .null: object[column] = .null
            case .integer(let n): object[column] = isTime ? .string(WallTime(nanosecondsSinceEpoch: n).rfc3339) : .int(n)
            case .real(let d): object[column] = .double(d)
            case .text(let t): object[column] = .string(t)
            case .blob(let bytes): object[column] = .string("<\(bytes.count) bytes>")
            }
        }
        return .object(object)
    }
}

// SPDX-License-Identifier: Apache-2.0
/// Reads an error reply (its name and parameters) back as a typed error, or nil when it does not
/// know the name. `ErrorDecoding.contracts` (Contracts) knows every built-in interface's errors.
public struct ErrorDecoding: Sendable {
    let decode: @Sendable (_ name: String, _ parameters: [String: JSONValue]) -> (any Error)?

    public init(_ decode: @escaping @Sendable (_ name: String, _ parameters: [String: JSONValue]) -> (any Error)?) {
        self.decode = decode
    }

    /// The typed error for `name` with `parameters`, or nil.
    public func error(named name: String, parameters: [String: JSONValue]) -> (any Error)? { decode(name, parameters) }

    /// Knows no error: every error reply is a `VarlinkErrorReply`.
    public static let none = ErrorDecoding { _, _ in nil }
}

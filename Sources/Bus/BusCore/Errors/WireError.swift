// SPDX-License-Identifier: Apache-2.0
/// An error that knows how to render itself as a varlink error reply.
///
/// The wire layer asks the error for its name and parameters; it never matches type names.
public protocol WireError: Error, Sendable, CustomStringConvertible {
    /// Fully qualified varlink error name, e.g. `io.appd.Auth.InvalidCredentials`.
    var wireName: String { get }
    /// The error's parameters as a JSON object.
    var wireParameters: [String: JSONValue] { get }
    /// Both at once (a requirement, so an error that computes them together is asked that way
    /// through `any WireError` too).
    var wire: (name: String, parameters: [String: JSONValue]) { get }
}

extension WireError {
    public var wireParameters: [String: JSONValue] { [:] }

    /// The name and the parameters together (an error that renders both from one encoding,
    /// as an `InterfaceError` does, computes them once).
    public var wire: (name: String, parameters: [String: JSONValue]) { (wireName, wireParameters) }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore

/// What goes wrong with a call that is not one of its interface's typed errors (those are
/// thrown as themselves: `TodosError.notFound`, `PaymentsError.paymentRequired(…)`).
public enum AppdClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// appd refused with an error no contract of this client declares (a gate's, the bus's,
    /// an external plugin's, or one from a newer appd): its HTTP status, name and parameters.
    case server(status: Int, name: String, parameters: [String: JSONValue])
    /// appd could not be reached, or the connection broke before a reply (after the retries
    /// an idempotent call is allowed).
    case transport(String)
    /// appd's answer is not the reply the contract says (a client older or newer than appd?).
    case unexpectedReply(String)
    /// The method needs a signed-in user and no session is stored: sign in first.
    case notSignedIn

    public var description: String {
        switch self {
        case .server(let status, let name, let parameters):
            "\(name) (HTTP \(status))" + (parameters.isEmpty ? "" : " \(JSONValue.object(parameters).jsonText)")
        case .transport(let reason): "appd could not be reached: \(reason)"
        case .unexpectedReply(let reason): "appd's reply is not what this client expects: \(reason)"
        case .notSignedIn: "not signed in: sign in first"
        }
    }
}

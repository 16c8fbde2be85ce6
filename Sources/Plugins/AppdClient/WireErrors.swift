// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

/// Turns an error body (`{"error": name, "parameters": {…}}`) into the typed error of the
/// interface that declares it, or `AppdClientError.server` when no contract does.
enum WireErrors {
    static func error(status: Int, body: JSONValue?) -> any Error {
        guard case .object(let object)? = body, case .string(let name)? = object["error"] else {
            return AppdClientError.server(status: status, name: "HTTP \(status)", parameters: [:])
        }
        var parameters: [String: JSONValue] = [:]
        if case .object(let given)? = object["parameters"] { parameters = given }
        return ContractErrors.typed(name: name, parameters: parameters) ?? AppdClientError.server(status: status, name: name, parameters: parameters)
    }
}

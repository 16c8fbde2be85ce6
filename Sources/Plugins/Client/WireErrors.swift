import BusCore
import Contracts

/// Turns an error body (`{"error": name, "parameters": {…}}`) into the typed error of the
/// interface that declares it, or `AppdClientError.server` when no contract here does.
enum WireErrors {
    static let interfaces: [any InterfaceError.Type] = [AuthError.self, TodosError.self, ChatError.self, PaymentsError.self, RatingError.self]

    static func error(status: Int, body: JSONValue?) -> any Error {
        guard case .object(let object)? = body, case .string(let name)? = object["error"] else {
            return AppdClientError.server(status: status, name: "HTTP \(status)", parameters: [:])
        }
        var parameters: [String: JSONValue] = [:]
        if case .object(let given)? = object["parameters"] { parameters = given }
        return typed(name: name, parameters: parameters) ?? AppdClientError.server(status: status, name: name, parameters: parameters)
    }

    static func typed(name: String, parameters: [String: JSONValue]) -> (any Error)? {
        for type in interfaces {
            if let error = decode(type, name, parameters) { return error }
        }
        return nil
    }

    private static func decode<E: InterfaceError>(_ type: E.Type, _ name: String, _ parameters: [String: JSONValue]) -> (any Error)? {
        E(wireName: name, parameters: parameters)
    }
}

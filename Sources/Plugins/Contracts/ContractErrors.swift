// SPDX-License-Identifier: Apache-2.0
import BusCore

/// Every built-in interface's error enum: an error reply read back as its typed error.
public enum ContractErrors {
    public static let all: [any InterfaceError.Type] = [
        AuthError.self, TodosError.self, ChatError.self, PaymentsError.self, RatingError.self, SettingsError.self, FilesError.self, DaemonError.self, BackupError.self,
        ExportError.self, ConsoleError.self,
    ]

    /// The typed error named `name` with `parameters`; nil when no contract declares it (a
    /// gate's, the bus's, an external plugin's) or the parameters are not its.
    public static func typed(name: String, parameters: [String: JSONValue]) -> (any InterfaceError)? {
        for type in all {
            if let error = decode(type, name, parameters) { return error }
        }
        return nil
    }

    private static func decode<E: InterfaceError>(_ type: E.Type, _ name: String, _ parameters: [String: JSONValue]) -> (any InterfaceError)? {
        E(wireName: name, parameters: parameters)
    }
}

extension ErrorDecoding {
    /// Every built-in interface's errors, as their enums (`VarlinkClient.call(_:errors:)`).
    public static let contracts = ErrorDecoding { name, parameters in ContractErrors.typed(name: name, parameters: parameters) }
}

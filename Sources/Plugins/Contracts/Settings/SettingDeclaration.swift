// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A setting a plugin declares in its manifest: its key, type and default. The settings plugin
/// checks every value set against it.
public struct SettingDeclaration: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable { case bool, int, string, `enum` }

    public var key: String
    public var type: Kind
    public var values: [String]?
    public var `default`: SettingValue
    public var scoped: Bool
    public var plugin: String
    public var description: String

    public init(key: String, type: Kind, values: [String]? = nil, default: SettingValue, scoped: Bool = false, plugin: String, description: String) {
        self.key = key
        self.type = type
        self.values = values
        self.default = `default`
        self.scoped = scoped
        self.plugin = plugin
        self.description = description
    }

    /// The longest string value.
    public static let maxStringLength = 200

    /// Why `value` is not a value of this setting, or nil when it is.
    public func problem(with value: SettingValue) -> String? {
        guard value.count == 1 else { return "sets exactly one of bool, int and string" }
        switch (type, value.json) {
        case (.bool, .bool): return nil
        case (.bool, _): return "is true or false"
        case (.int, .int): return nil
        case (.int, _): return "is a whole number"
        case (.enum, .string(let text)), (.string, .string(let text)):
            if let values, !values.contains(text) { return "is one of \(values.joined(separator: ", "))" }
            if let problem = TextLimit(characters: Self.maxStringLength).violation(of: text) { return problem }
            return nil
        case (.enum, _): return "is one of \((values ?? []).joined(separator: ", "))"
        case (.string, _): return "is a string"
        }
    }
}

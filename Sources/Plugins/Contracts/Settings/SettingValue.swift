// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A setting's value: exactly one of `bool`, `int` and `string`, as its declaration's type says
/// (an enum's value is a string).
public struct SettingValue: Codable, Sendable, Hashable, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    public var bool: Bool?
    public var int: Int64?
    public var string: String?

    public init(bool: Bool? = nil, int: Int64? = nil, string: String? = nil) {
        self.bool = bool
        self.int = int
        self.string = string
    }

    public init(booleanLiteral value: Bool) { bool = value }
    public init(integerLiteral value: Int64) { int = value }
    public init(stringLiteral value: String) { string = value }

    /// How many of the three are set (a value has exactly one).
    public var count: Int { [bool != nil, int != nil, string != nil].filter { $0 }.count }

    /// The plain JSON value (true, 14, "text"); null when none or several are set.
    public var json: JSONValue {
        guard count == 1 else { return .null }
        if let bool { return .bool(bool) }
        if let int { return .int(int) }
        return string.map(JSONValue.string) ?? .null
    }

    /// From a plain JSON value; nil for anything but a bool, a whole number or a string.
    public init?(json: JSONValue) {
        switch json {
        case .bool(let value): self.init(bool: value)
        case .int(let value): self.init(int: value)
        case .string(let value): self.init(string: value)
        default: return nil
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus

// The kinds of value a setting takes, each with its check: what a ConfigKey is made with.
extension ConfigKey {
    /// A client id or domain: printable, no spaces or commas.
    @Sendable static func clientID(_ text: String) throws(ConfigProblem) {
        guard text.utf8.count <= 255, !text.contains(where: { $0.isWhitespace || $0 == "," }), !text.containsControlCharacters else {
            throw ConfigProblem("needs client ids without spaces, commas or control characters")
        }
    }

    /// An https:// URL.
    static func https(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, String) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            guard let text = value.stringValue, text.hasPrefix("https://"), text.count > 8, !text.contains(where: \.isWhitespace) else {
                throw ConfigProblem("needs an https:// URL")
            }
            set(&config, text)
        }
    }

    /// true or false (JSON, or the words from a flag or the environment).
    static func flag(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, Bool) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            switch value {
            case .bool(let b): set(&config, b)
            case .string("true"): set(&config, true)
            case .string("false"): set(&config, false)
            default: throw ConfigProblem("needs true or false")
            }
        }
    }

    static func text(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, String) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            guard let text = value.stringValue, !text.isEmpty else { throw ConfigProblem("needs a non-empty string") }
            set(&config, text)
        }
    }

    /// A list of absolute paths: a JSON list, or comma-separated text.
    static func paths(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, [String]) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            let list: [String]
            switch value {
            case .array(let items):
                list = items.compactMap(\.stringValue)
                guard list.count == items.count else { throw ConfigProblem("needs a list of absolute paths") }
            case .string(let text): list = text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            default: throw ConfigProblem("needs a list of absolute paths")
            }
            guard list.allSatisfy({ $0.hasPrefix("/") && !$0.split(separator: "/").contains("..") }) else {
                throw ConfigProblem("needs absolute paths without '..'")
            }
            set(&config, list)
        }
    }

    /// A list of strings (a JSON list, or comma-separated text), each checked.
    static func list(
        _ name: String, _ flag: String, _ help: String, secret: Bool = false, check: @escaping @Sendable (String) throws(ConfigProblem) -> Void,
        set: @escaping @Sendable (inout AppdConfig, [String]) -> Void
    ) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help, secret: secret) { config, value throws(ConfigProblem) in
            let items: [String]
            switch value {
            case .null: items = []
            case .string(let text): items = text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            case .array(let values):
                items = values.compactMap(\.stringValue)
                guard items.count == values.count else { throw ConfigProblem("needs a list of strings") }
            default: throw ConfigProblem("needs a list of strings")
            }
            for item in items { try check(item) }
            set(&config, items)
        }
    }

    static func integer(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, Int) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            guard case .int(let n) = value, n > 0, n <= Int64(Int32.max) else { throw ConfigProblem("needs a positive whole number") }
            set(&config, Int(n))
        }
    }

    static func optionalInteger(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, Int?) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            if value == .null { set(&config, nil); return }
            guard case .int(let n) = value, n > 0, n <= Int64(Int32.max) else { throw ConfigProblem("needs a positive whole number or null") }
            set(&config, Int(n))
        }
    }

    static func seconds(_ name: String, _ flag: String, _ help: String, _ set: @escaping @Sendable (inout AppdConfig, Duration) -> Void) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            let number: Double
            switch value {
            case .int(let i): number = Double(i)
            case .double(let d): number = d
            default: throw ConfigProblem("needs a positive number of seconds")
            }
            guard number > 0, number <= 86_400 else { throw ConfigProblem("needs a positive number of seconds, at most 86400") }
            set(&config, .milliseconds(Int64(number * 1000)))
        }
    }

    /// A whole number in `range` (0 often meaning "off" or "the system's").
    static func wholeNumber(
        _ name: String, _ flag: String, _ help: String, _ range: ClosedRange<Int64>, _ set: @escaping @Sendable (inout AppdConfig, Int) -> Void
    ) -> ConfigKey {
        ConfigKey(name: name, flag: flag, help: help) { config, value throws(ConfigProblem) in
            guard case .int(let n) = value, range.contains(n) else { throw ConfigProblem("needs a whole number from \(range.lowerBound) to \(range.upperBound)") }
            set(&config, Int(n))
        }
    }
}

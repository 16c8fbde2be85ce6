// SPDX-License-Identifier: Apache-2.0
/// Which topics a subscription receives: an exact topic or a pattern.
///
/// Topics are dot-separated tokens of letters, digits, `_` and `-` (`todos.completed`).
/// In a pattern, `*` matches exactly one token (`todos.*`) and a final `>` matches one or
/// more tokens (`todos.>`); `>` alone matches every topic.
public struct TopicFilter: Hashable, Sendable, CustomStringConvertible {
    enum Token: Hashable, Sendable {
        case literal(Substring)
        case one
        case rest
    }

    public let pattern: String
    /// One token list per alternative pattern; a topic matches when any alternative does.
    let alternatives: [[Token]]

    /// Matches a topic that matches any of the patterns.
    /// Matches the topics of these event types.
    public init(events types: [any Event.Type]) throws(InvalidTopic) {
        try self.init(anyOf: types.map { $0.topic })
    }

    public init(anyOf patterns: [String]) throws(InvalidTopic) {
        guard !patterns.isEmpty else { throw InvalidTopic(topic: "", reason: "give at least one topic or pattern") }
        var alternatives: [[Token]] = []
        for pattern in patterns { alternatives += try TopicFilter(pattern).alternatives }
        self.pattern = patterns.joined(separator: " ")
        self.alternatives = alternatives
    }

    /// Parses a topic or pattern; throws `InvalidTopic` naming what is wrong.
    public init(_ pattern: String) throws(InvalidTopic) {
        let parts = pattern.split(separator: ".", omittingEmptySubsequences: false)
        var tokens: [Token] = []
        for (index, part) in parts.enumerated() {
            switch part {
            case "*": tokens.append(.one)
            case ">":
                guard index == parts.count - 1 else {
                    throw InvalidTopic(topic: pattern, reason: "'>' may only stand last")
                }
                tokens.append(.rest)
            default:
                try Self.checkToken(part, in: pattern)
                tokens.append(.literal(part))
            }
        }
        self.pattern = pattern
        self.alternatives = [tokens]
    }

    /// Every topic.
    public static let all = try! TopicFilter(">")  // safe: ">" is a valid pattern (pinned by a test)

    /// Checks that a concrete topic (no wildcards) is well formed.
    public static func validate(topic: String) throws(InvalidTopic) {
        // One pass over the bytes (every logged event is checked): the same rules as `checkToken`.
        var length = 0
        for byte in topic.utf8 {
            if byte == 0x2E {
                guard length > 0 else { throw InvalidTopic(topic: topic, reason: "empty token (check the dots)") }
                length = 0
                continue
            }
            length += 1
            guard length <= 64 else { throw InvalidTopic(topic: topic, reason: "token longer than 64 bytes") }
            guard Self.isTokenByte(byte) else { throw InvalidTopic(topic: topic, reason: "tokens use letters, digits, '_' and '-'") }
        }
        guard length > 0 else { throw InvalidTopic(topic: topic, reason: "empty token (check the dots)") }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x5F || byte == 0x2D
    }

    private static func checkToken(_ part: Substring, in topic: String) throws(InvalidTopic) {
        guard !part.isEmpty else { throw InvalidTopic(topic: topic, reason: "empty token (check the dots)") }
        guard part.utf8.count <= 64 else { throw InvalidTopic(topic: topic, reason: "token longer than 64 bytes") }
        for byte in part.utf8 {
            guard isTokenByte(byte) else { throw InvalidTopic(topic: topic, reason: "tokens use letters, digits, '_' and '-'") }
        }
    }

    /// The literal first tokens of its patterns, or nil when one begins with `*` or `>` (it may
    /// match a topic with any first token). The bus indexes subscriptions by these.
    package var firstTokens: Set<Substring>? {
        var tokens: Set<Substring> = []
        for alternative in alternatives {
            guard case .literal(let first)? = alternative.first else { return nil }
            tokens.insert(first)
        }
        return tokens
    }

    /// Whether a concrete topic matches this filter.
    public func matches(_ topic: String) -> Bool {
        alternatives.contains { Self.matches(topic, $0) }
    }

    private static func matches(_ topic: String, _ tokens: [Token]) -> Bool {
        var index = 0
        for part in topic.split(separator: ".", omittingEmptySubsequences: false) {
            guard index < tokens.count else { return false }
            switch tokens[index] {
            case .rest: return true
            case .one: break
            case .literal(let literal): if literal != part { return false }
            }
            index += 1
        }
        return index == tokens.count
    }

    public var description: String { pattern }
}

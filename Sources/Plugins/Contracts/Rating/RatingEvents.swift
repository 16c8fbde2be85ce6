// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The events the rating plugin publishes.
public enum RatingEvents {
    public static let all: [any Event.Type] = [RatingPromptSuggested.self]
}

/// The signals say this is a good moment to ask the user for a rating.
///
/// Version 2 adds `reason` (the rule that decided); version 1 rows read as reason "unknown".
public struct RatingPromptSuggested: OwnedEvent, Equatable {
    public static let topic = "rating.promptSuggested"
    public static let version = 2
    public var userId: String
    public var reason: String
    public init(userId: String, reason: String) {
        self.userId = userId
        self.reason = reason
    }

    public static func upgrade(_ payload: JSONValue, from version: Int) throws -> JSONValue {
        guard version < 2, case .object(var fields) = payload else { return payload }
        fields["reason"] = fields["reason"] ?? "unknown"
        return .object(fields)
    }
}

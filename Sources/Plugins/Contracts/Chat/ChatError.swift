// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Chat`.
public enum ChatError: InterfaceError {
    public static let interface = "io.appd.Chat"

    case notFound
    case validationFailed(field: String, reason: String)
    /// The account holds as many conversations as it may.
    case quotaExceeded(limit: Int)
    /// The conversation is not at the version expected: the conversation as it stands.
    case conflict(conversation: Conversation)
    /// The cursor is older than the deletions kept.
    case resyncRequired(reason: String)
    /// Send's model is not on the operator's list.
    case modelNotAllowed(model: String, allowed: [String])
    /// The account holds as many memories as it may.
    case memoryFull(limit: Int)

    public static func validation(_ field: String, _ reason: String) -> ChatError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .notFound: "no such conversation or message (or it is not yours)"
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        case .quotaExceeded(limit: let limit): "this account holds \(limit) conversations, as many as it may; delete some first"
        case .conflict(let conversation):
            "the conversation changed since (it is at version \(conversation.version) now); look at it and decide again"
        case .resyncRequired(reason: let reason): reason
        case .modelNotAllowed(let model, let allowed): "the model '\(model)' is not offered; use one of: \(allowed.joined(separator: ", "))"
        case .memoryFull(let limit): "this account keeps \(limit) memories, as many as it may; delete some first"
        }
    }
}

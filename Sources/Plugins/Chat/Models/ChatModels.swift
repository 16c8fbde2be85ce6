// SPDX-License-Identifier: Apache-2.0
import Contracts

/// The models `Send` takes: the operator's list (`chatModels`), each with the entitlement it
/// needs, and the default a request without a model gets.
public struct ChatModels: Sendable, Equatable {
    /// The default first.
    public let all: [ChatModel]

    /// `models` empty: only `defaultModel`. The default is offered to everyone: an entitlement
    /// the list gives it is ignored (a request without a model must always have one to use).
    public init(_ models: [ChatModel], default defaultModel: String) {
        var all: [ChatModel] = []
        all.append(ChatModel(name: defaultModel, entitlement: nil, default: true))
        for model in models where model.name != defaultModel && !all.contains(where: { $0.name == model.name }) {
            all.append(ChatModel(name: model.name, entitlement: model.entitlement, default: false))
        }
        self.all = all
    }

    public var defaultModel: ChatModel { all[0] }
    public var names: [String] { all.map(\.name) }

    public func model(_ name: String) -> ChatModel? { all.first { $0.name == name } }

    /// `model` or `model=entitlement` (a config item).
    public static func parse(_ item: String) -> ChatModel? {
        let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
        guard let name = parts.first, !name.isEmpty, name.utf8.count <= 200 else { return nil }
        if parts.count == 2 {
            guard !parts[1].isEmpty else { return nil }
            return ChatModel(name: name, entitlement: parts[1])
        }
        return ChatModel(name: name)
    }
}

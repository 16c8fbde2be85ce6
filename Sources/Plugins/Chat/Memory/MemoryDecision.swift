// SPDX-License-Identifier: Apache-2.0
/// A memory as the extractor sees it.
public struct MemoryFact: Sendable, Equatable {
    public var id: String
    public var text: String
    public init(id: String, text: String) {
        self.id = id
        self.text = text
    }
}

/// What the extractor decided about the user's memories after one of their messages.
public enum MemoryDecision: Sendable, Equatable {
    case add(String)
    case update(id: String, text: String)
    case delete(id: String)
}

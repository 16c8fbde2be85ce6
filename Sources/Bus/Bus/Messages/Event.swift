/// A fact that happened, published to any number of subscribers under a dotted topic.
public protocol Event: Codable, Sendable {
    /// Dotted topic, e.g. `todos.completed`.
    static var topic: String { get }
}

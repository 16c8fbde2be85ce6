import BusCore
import Contracts
import Foundation

/// Everything `OfflineTodos` keeps on the device: the todos as appd last said, the changes not
/// yet sent, where the change feed stands, and what is waiting for the app (conflicts,
/// refusals). The todos the app shows are `server` with `queue` applied.
public struct OfflineTodosState: Codable, Sendable, Equatable {
    /// The todos as appd last said, by id.
    public var server: [String: Todo] = [:]
    /// The app's changes appd has not confirmed, in the order made.
    public var queue: [QueuedTodoWrite] = []
    /// The change feed's position: `Changes` continues after it (nil: never pulled).
    public var cursor: Int64?
    public var conflicts: [TodoConflict] = []
    /// The latest refusals (at most `OfflineTodos.rejectedKept`), oldest first.
    public var rejected: [RejectedTodoWrite] = []

    public init() {}
}

/// Where `OfflineTodos` keeps its state: each `save` replaces the whole state atomically (all of
/// it or none survives a crash), and `load` returns the last one saved. An app plugs its own
/// (SwiftData, GRDB, a file in its container); `FileOfflineTodosStore` is the library's.
public protocol OfflineTodosStore: Sendable {
    /// The last state saved; nil when none was. Throws when one was saved but cannot be read.
    func load() async throws -> OfflineTodosState?
    func save(_ state: OfflineTodosState) async throws
}

/// The state as one JSON file, written whole (a new 0600 file synced and renamed over the old).
public actor FileOfflineTodosStore: OfflineTodosStore {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> OfflineTodosState? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONParser.parse(Array(data)).decode(as: OfflineTodosState.self)
    }

    public func save(_ state: OfflineTodosState) throws {
        try AtomicFile.write(JSONWriter.bytes(try JSONValue(encoding: state)), to: path)
    }
}

/// Keeps the state in memory: for tests and previews.
public actor InMemoryOfflineTodosStore: OfflineTodosStore {
    private var state: OfflineTodosState?

    public init(_ state: OfflineTodosState? = nil) { self.state = state }

    public func load() -> OfflineTodosState? { state }
    public func save(_ state: OfflineTodosState) { self.state = state }
}

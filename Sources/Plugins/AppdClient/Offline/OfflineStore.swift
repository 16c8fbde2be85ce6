// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation

/// Everything an `OfflineRepository` keeps on the device: the items as appd last said, the
/// changes not yet sent, where the change feed stands, and what is waiting for the app
/// (conflicts, refusals). The items the app shows are `server` with `queue` applied.
public struct OfflineState<Kind: OfflineKind>: Codable, Sendable, Equatable {
    /// The items as appd last said, by id.
    public var server: [String: Kind.Item] = [:]
    /// The app's changes appd has not confirmed, in the order made.
    public var queue: [QueuedWrite<Kind>] = []
    /// The change feed's position: `Changes` continues after it (nil: never pulled).
    public var cursor: Int64?
    public var conflicts: [OfflineConflict<Kind>] = []
    /// The latest refusals (at most `OfflineRepository.rejectedKept`), oldest first.
    public var rejected: [RejectedWrite<Kind>] = []

    public init() {}
}

/// Where an `OfflineRepository` keeps its state: each `save` replaces the whole state
/// atomically (all of it or none survives a crash), and `load` returns the last one saved. An
/// app plugs its own (SwiftData, GRDB, a file in its container); `FileOfflineStore` is the
/// library's.
public protocol OfflineStore<Kind>: Sendable {
    associatedtype Kind: OfflineKind
    /// The last state saved; nil when none was. Throws when one was saved but cannot be read.
    func load() async throws -> OfflineState<Kind>?
    func save(_ state: OfflineState<Kind>) async throws
}

/// The state as one JSON file, written whole (a new 0600 file synced and renamed over the old).
public actor FileOfflineStore<Kind: OfflineKind>: OfflineStore {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> OfflineState<Kind>? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONParser.parse(Array(data)).decode(as: OfflineState<Kind>.self)
    }

    public func save(_ state: OfflineState<Kind>) throws {
        try AtomicFile.write(JSONWriter.bytes(try JSONValue(encoding: state)), to: path)
    }
}

/// Keeps the state in memory: for tests and previews.
public actor InMemoryOfflineStore<Kind: OfflineKind>: OfflineStore {
    private var state: OfflineState<Kind>?

    public init(_ state: OfflineState<Kind>? = nil) { self.state = state }

    public func load() -> OfflineState<Kind>? { state }
    public func save(_ state: OfflineState<Kind>) { self.state = state }
}

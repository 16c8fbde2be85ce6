// SPDX-License-Identifier: Apache-2.0
import Contracts

/// One kind of item an `OfflineRepository` keeps on the device: items appd versions (each
/// change raises `version`) and feeds (`Changes` with tombstones, then live events), changed
/// by writes that take an idempotency key and an expected version. `TodosKind` and
/// `ConversationsKind` are the two appd has.
public protocol OfflineKind: Sendable {
    associatedtype Item: Codable, Sendable, Hashable, Identifiable where Item.ID == String
    /// One change the app makes to an item (add, edit, delete, …), as it is queued.
    associatedtype Change: Codable, Sendable, Hashable
    /// The server calls the repository makes.
    associatedtype Service: Sendable

    static func version(of item: Item) -> Int64
    /// The order the app's list shows (oldest first for todos).
    static func precedes(_ a: Item, _ b: Item) -> Bool
    /// The change that deletes an item.
    static var deletion: Change { get }
    /// `item` (nil: none yet) as the app sees it once `change` is made; nil when deleted.
    static func applied(_ change: Change, to item: Item?, id: String, madeAt: String) -> Item?
    /// Sends the change; returns the item as appd now has it (nil when deleted).
    static func send(_ change: Change, id: String, expectedVersion: Int64?, key: String, to service: Service) async throws -> Item?
    static func changes(after cursor: Int64?, from service: Service) async throws -> OfflineFeedPage<Item>
    /// The log position of each change after `cursor`, live (a signal to pull).
    static func signals(after cursor: Int64, from service: Service) -> AsyncThrowingStream<Int64, any Error>
    /// The changes that turn appd's `server` item into `wanted` (nil: deleted).
    static func changes(from server: Item, to wanted: Item?) -> [Change]
    /// The item as it stands on appd, when `error` is this kind's conflict.
    static func conflictingItem(in error: any Error) -> Item?
    static func isNotFound(_ error: any Error) -> Bool
    static func isResyncRequired(_ error: any Error) -> Bool
}

/// One page of a kind's change feed.
public struct OfflineFeedPage<Item: Sendable & Hashable>: Sendable, Hashable {
    public var changes: [OfflineFeedChange<Item>]
    public var nextCursor: Int64
    public var more: Bool

    public init(changes: [OfflineFeedChange<Item>], nextCursor: Int64, more: Bool) {
        self.changes = changes
        self.nextCursor = nextCursor
        self.more = more
    }
}

/// One change on the feed: the item as it stands, or a deleted one's id.
public struct OfflineFeedChange<Item: Sendable & Hashable>: Sendable, Hashable, Identifiable {
    public var seq: Int64
    public var id: String
    public var deleted: Bool
    public var item: Item?

    public init(seq: Int64, id: String, deleted: Bool, item: Item?) {
        self.seq = seq
        self.id = id
        self.deleted = deleted
        self.item = item
    }
}

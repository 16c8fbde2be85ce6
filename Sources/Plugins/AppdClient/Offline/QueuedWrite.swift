// SPDX-License-Identifier: Apache-2.0
import Contracts
import Foundation

/// One change the app made, kept until appd has it: sent in the order made, each with the
/// idempotency key made with it (a resend after a lost reply, a crash or a restart has its
/// effect once) and the version it was based on.
public struct QueuedWrite<Kind: OfflineKind>: Codable, Sendable, Hashable, Identifiable {
    /// The idempotency key, made with the change.
    public let key: String
    /// The item's id.
    public let itemId: String
    public let change: Kind.Change
    /// The version of the item on appd the change was based on; nil for an add, and for a
    /// change to an item appd did not have yet (its add was queued before it).
    public internal(set) var expectedVersion: Int64?
    /// When the app made the change (RFC 3339).
    public let madeAt: String

    public var id: String { key }

    init(itemId: String, change: Kind.Change, expectedVersion: Int64?, madeAt: String) {
        self.key = UUID().uuidString.lowercased()
        self.itemId = itemId
        self.change = change
        self.expectedVersion = expectedVersion
        self.madeAt = madeAt
    }

    func applied(to item: Kind.Item?) -> Kind.Item? { Kind.applied(change, to: item, id: itemId, madeAt: madeAt) }
}

/// Changes the app made that appd has not taken because the item changed there meanwhile (or
/// an add's id holds another item): both versions, for the app (or its user) to decide.
/// Nothing of the app's is sent or dropped until `OfflineRepository.resolve` says which wins.
public struct OfflineConflict<Kind: OfflineKind>: Codable, Sendable, Hashable, Identifiable {
    public let itemId: String
    /// The item as it stands on appd.
    public let server: Kind.Item
    /// The item as the app had made it (nil: the app deleted it).
    public let mine: Kind.Item?
    /// The app's changes held back, in the order made.
    public let writes: [QueuedWrite<Kind>]

    public var id: String { itemId }
}

/// How a conflict ends.
public enum OfflineResolution<Item: Sendable & Hashable>: Sendable, Hashable {
    /// appd's item stays; the app's changes are dropped.
    case keepServer
    /// The app's version is sent over appd's (a delete deletes it).
    case keepMine
    /// This item (the app merged the two) is sent over appd's.
    case merged(Item)
}

/// A change appd refused for good (invalid, over a quota, not allowed): dropped from the queue
/// with the reason, for the app to show. Later changes to the same item are dropped with it.
public struct RejectedWrite<Kind: OfflineKind>: Codable, Sendable, Hashable, Identifiable {
    public let write: QueuedWrite<Kind>
    /// What appd said, in words for the app's user.
    public let reason: String
    /// The error's wire name (`io.appd.Todos.ValidationFailed`), when appd named one.
    public let error: String?

    public var id: String { write.key }
}

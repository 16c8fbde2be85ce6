// SPDX-License-Identifier: Apache-2.0
/// What happens when a subscriber falls a whole buffer behind.
public enum OverflowPolicy: Sendable, Hashable {
    /// Discard the oldest buffered event; the subscriber sees the count in `droppedBefore`.
    case dropOldest
    /// End the subscription with `SubscriptionOverflow` after the buffered events.
    case disconnect
}

/// Buffer size and overflow policy of one live subscription.
public struct SubscriptionOptions: Sendable, Hashable {
    public var capacity: Int
    public var overflow: OverflowPolicy

    public init(capacity: Int = 1024, overflow: OverflowPolicy = .dropOldest) {
        self.capacity = max(1, capacity)
        self.overflow = overflow
    }

    public static let `default` = SubscriptionOptions()
}

// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The typed async bus: commands with exactly one handler and the gate chain every command
/// passes through (what it is as a `CommandBus`), and events with many subscribers.
///
/// Events are fanned out by the publisher into each matching subscription's bounded buffer;
/// publishing never waits for a subscriber.
public final class EventBus: CommandBus, @unchecked Sendable {  // safe: as CommandBus, its own stored properties are constants or locks
    /// Tunables of one bus; every one has a bound.
    public struct Options: Sendable {
        /// Deadline applied to calls that do not give one; nil means none.
        public var defaultTimeout: Duration?
        /// Replies a streaming handler may run ahead of its consumer before it waits.
        public var streamCapacity: Int
        /// Topics whose matching subscriptions are remembered for fast fan-out.
        public var topicCacheLimit: Int

        public init(defaultTimeout: Duration? = nil, streamCapacity: Int = 64, topicCacheLimit: Int = 4096) {
            self.defaultTimeout = defaultTimeout
            self.streamCapacity = max(1, streamCapacity)
            self.topicCacheLimit = max(1, topicCacheLimit)
        }
    }

    /// Counters for `status` output.
    public typealias Counters = BusCounters

    struct EventRegistry {
        var subscriptions: SubscriptionIndex
        var nextID = 0
    }

    /// The topics plugins' event types own: audience, payload type, publisher.
    public let topics = EventTopics()
    /// Signed-in users' open streams, woken when their account's sessions change.
    public let sessionStreams = SessionStreams()
    public let options: Options
    let registry: Mutex<EventRegistry>
    let eventCount = Atomic<Int>(0)
    let deliveryCount = Atomic<Int>(0)

    /// Builds a bus whose gate chain is fixed from here on, in the gates' positions (outermost
    /// first; gates at one position in the order given).
    public init(gates: [any Gate] = [], options: Options = Options(), logger: Logger = Logger(label: "appd.bus")) {
        self.registry = Mutex(EventRegistry(subscriptions: SubscriptionIndex(cacheLimit: options.topicCacheLimit)))
        self.options = options
        super.init(gates: gates, defaultTimeout: options.defaultTimeout, streamCapacity: options.streamCapacity, logger: logger)
    }

    public var counters: Counters {
        Counters(
            commands: commandCount.load(ordering: .relaxed), events: eventCount.load(ordering: .relaxed),
            deliveries: deliveryCount.load(ordering: .relaxed),
            subscriptions: registry.withLock { $0.subscriptions.count })
    }
}

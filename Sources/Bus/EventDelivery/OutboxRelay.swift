// SPDX-License-Identifier: Apache-2.0
import BusCore
import Bus
import Storage

/// Publishes on the bus, in commit order, the batches a database hands its `EventOutbox`.
///
/// It is not stopped by a graceful shutdown: it returns when the outbox finishes, which the
/// database does when it closes, so every event committed before the close reaches live
/// subscribers (the bus drains them after).
public struct OutboxRelay: Sendable {
    public var name: String { "outbox-relay" }
    private let outbox: EventOutbox
    private let bus: EventBus

    public init(outbox: EventOutbox, bus: EventBus) {
        self.outbox = outbox
        self.bus = bus
    }

    /// Relays until the outbox finishes.
    public func run() async {
        for await batch in outbox.batches {
            for event in batch { bus.publish(event) }
        }
    }

    /// Starts relaying in a task of its own; await its value to know everything was published.
    public func start() -> Task<Void, Never> {
        // Unstructured: returned to the caller, which owns it (a service awaits or cancels it).
        Task { await run() }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Storage
import EventDelivery

extension EventOutbox {
    /// An outbox whose batches an `OutboxRelay` publishes on `bus` until the database it is
    /// given to closes (as appd wires them); nil for no bus.
    public static func relaying(to bus: EventBus?) -> EventOutbox? {
        guard let bus else { return nil }
        let outbox = EventOutbox()
        _ = OutboxRelay(outbox: outbox, bus: bus).start()
        return outbox
    }
}

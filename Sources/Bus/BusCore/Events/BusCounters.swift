// SPDX-License-Identifier: Apache-2.0
/// Counters of the in-process event bus (`appctl status`).
public struct BusCounters: Sendable, Codable, Hashable {
    public var commands: Int
    public var events: Int
    public var deliveries: Int
    public var subscriptions: Int
    public init(commands: Int, events: Int, deliveries: Int, subscriptions: Int) {
        self.commands = commands
        self.events = events
        self.deliveries = deliveries
        self.subscriptions = subscriptions
    }
}

// SPDX-License-Identifier: Apache-2.0
/// `appctl events tail [--since N] [TOPIC…]` and `appctl events topics`.
enum EventsGroup {
    static let group = CommandGroup(
        name: "events", abstract: "Follow the events plugins publish, or list their topics.",
        leaves: [EventsTail.self, EventsTopics.self])
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing

@Suite struct EventStressTests {
    /// Several publishers and subscribers at once, buffers large enough: every subscriber sees
    /// every event exactly once, and each publisher's events in the order it published them.
    @Test func concurrentPublishersLoseNothingAndKeepOrder() async throws {
        let publishers = 4
        let perPublisher = 5_000
        let subscribers = 4
        let bus = EventBus()
        let options = SubscriptionOptions(capacity: publishers * perPublisher, overflow: .disconnect)
        let subscriptions = try (0..<subscribers).map { _ in try bus.subscribe(TodoCompleted.self, options: options) }

        let consumers = subscriptions.map { subscription in
            Task { () -> [[Int]] in
                var perSource = Array(repeating: [Int](), count: publishers)
                var total = 0
                for try await received in subscription {
                    perSource[received.event.publisher].append(received.event.id)
                    total += 1
                    if total == publishers * perPublisher { break }
                }
                return perSource
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for p in 0..<publishers {
                group.addTask {
                    for i in 0..<perPublisher { bus.publish(TodoCompleted(id: i, publisher: p), causedBy: nil) }
                }
            }
        }
        for consumer in consumers {
            let perSource = try await consumer.value
            for source in perSource {
                #expect(source == Array(0..<perPublisher))
            }
        }
        #expect(subscriptions.allSatisfy { $0.subscription.droppedCount == 0 })
    }
}

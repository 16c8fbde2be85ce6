// SPDX-License-Identifier: Apache-2.0
/// The live subscriptions, indexed for fan-out (security review finding 3): a publish tests
/// only the subscriptions whose patterns can start with the topic's first token (plus those
/// that begin with a wildcard), and remembers the result per topic. Subscribing or leaving
/// updates only the remembered topics that subscription matches, instead of forgetting them
/// all, so opening and closing subscriptions cannot make every publish scan every pattern.
///
/// A value type, confined to the bus's registry lock.
struct SubscriptionIndex {
    private(set) var queues: [Int: SubscriptionQueue] = [:]
    /// Subscriptions by the literal first token of their patterns.
    private var byFirstToken: [Substring: [Int: SubscriptionQueue]] = [:]
    /// Subscriptions with a pattern that begins with `*` or `>`.
    private var wildcard: [Int: SubscriptionQueue] = [:]
    /// Topic → the subscriptions it reaches, in subscription order.
    private var cache: [String: [SubscriptionQueue]] = [:]
    let cacheLimit: Int

    init(cacheLimit: Int) { self.cacheLimit = max(1, cacheLimit) }

    var count: Int { queues.count }

    mutating func insert(_ queue: SubscriptionQueue) {
        queues[queue.id] = queue
        if let tokens = queue.filter.firstTokens {
            for token in tokens { byFirstToken[token, default: [:]][queue.id] = queue }
        } else {
            wildcard[queue.id] = queue
        }
        // Ids only grow: appending keeps each remembered list in subscription order.
        for (topic, list) in cache where queue.filter.matches(topic) { cache[topic] = list + [queue] }
    }

    @discardableResult
    mutating func remove(_ id: Int) -> SubscriptionQueue? {
        guard let queue = queues.removeValue(forKey: id) else { return nil }
        if let tokens = queue.filter.firstTokens {
            for token in tokens {
                byFirstToken[token]?[id] = nil
                if byFirstToken[token]?.isEmpty == true { byFirstToken[token] = nil }
            }
        } else {
            wildcard[id] = nil
        }
        for (topic, list) in cache where queue.filter.matches(topic) { cache[topic] = list.filter { $0.id != id } }
        return queue
    }

    /// The subscriptions `topic` reaches, in subscription order.
    mutating func matching(_ topic: String) -> [SubscriptionQueue] {
        if let cached = cache[topic] { return cached }
        let first = topic.utf8.firstIndex(of: UInt8(ascii: ".")).map { topic[..<$0] } ?? topic[...]
        var found: [SubscriptionQueue] = []
        for queue in (byFirstToken[first] ?? [:]).values where queue.filter.matches(topic) { found.append(queue) }
        for queue in wildcard.values where queue.filter.matches(topic) { found.append(queue) }
        found.sort { $0.id < $1.id }
        if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
        cache[topic] = found
        return found
    }
}

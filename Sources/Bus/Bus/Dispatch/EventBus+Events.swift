extension EventBus {
    // MARK: Publishing

    /// Publishes a typed event to every matching subscription. Never waits for subscribers.
    public func publish<E: Event>(_ event: E, causedBy cause: Envelope? = nil) {
        publish(BusEvent(topic: E.topic, payload: .typed(event), causedBy: cause))
    }

    /// Publishes a JSON event under a topic given at run time (wire, external plugins).
    public func publish(topic: String, payload: JSONValue, causedBy cause: Envelope? = nil) throws(InvalidTopic) {
        try TopicFilter.validate(topic: topic)
        publish(BusEvent(topic: topic, payload: .json(payload), causedBy: cause))
    }

    /// Publishes a prepared event (for example one read back from the event log).
    public func publish(_ event: BusEvent) {
        eventCount.add(1, ordering: .relaxed)
        let targets = matchingQueues(event.topic)
        guard !targets.isEmpty else { return }
        var closed: [Int] = []
        for queue in targets where !queue.enqueue(event) {
            closed.append(queue.id)
        }
        deliveryCount.add(targets.count - closed.count, ordering: .relaxed)
        for id in closed { removeQueue(id) }
    }

    private func matchingQueues(_ topic: String) -> [SubscriptionQueue] {
        registry.withLock { r in
            if let cached = r.matchCache[topic] { return cached }
            let matching = r.queues.values.filter { $0.filter.matches(topic) }.sorted { $0.id < $1.id }
            if r.matchCache.count >= options.topicCacheLimit { r.matchCache.removeAll(keepingCapacity: true) }
            r.matchCache[topic] = matching
            return matching
        }
    }

    // MARK: Subscribing

    /// Subscribes to an exact topic or a pattern (`todos.*`, `>`).
    public func subscribe(_ pattern: String, options: SubscriptionOptions = .default) throws(InvalidTopic) -> Subscription {
        subscribe(try TopicFilter(pattern), options: options)
    }

    /// Subscribes with a parsed filter.
    public func subscribe(_ filter: TopicFilter, options: SubscriptionOptions = .default) -> Subscription {
        let queue = registry.withLock { r in
            r.nextID += 1
            let queue = SubscriptionQueue(id: r.nextID, filter: filter, options: options)
            r.queues[queue.id] = queue
            r.matchCache.removeAll(keepingCapacity: true)
            return queue
        }
        return Subscription(queue: queue) { [weak self] id in self?.removeQueue(id) }
    }

    /// Subscribes to one event type.
    public func subscribe<E: Event>(_ type: E.Type, options: SubscriptionOptions = .default) -> TypedSubscription<E> {
        // A static topic is a programming contract; a malformed one is caught by plugin tests.
        let filter = (try? TopicFilter(E.topic)) ?? TopicFilter.all
        return TypedSubscription(subscription: subscribe(filter, options: options))
    }

    func removeQueue(_ id: Int) {
        registry.withLock { r in
            if r.queues.removeValue(forKey: id) != nil { r.matchCache.removeAll(keepingCapacity: true) }
        }
    }

    // MARK: Listeners

    /// Runs `handler` for every event of a type. A handler that throws is logged under `name`
    /// and the listener carries on; it never affects the publisher or other subscribers.
    public func listen<E: Event>(
        _ type: E.Type, name: String, options: SubscriptionOptions = .default,
        handler: @escaping @Sendable (E, BusEvent) async throws -> Void
    ) -> Listener {
        let filter = (try? TopicFilter(E.topic)) ?? TopicFilter.all
        return listen(filter, name: name, options: options) { event in
            if let value = event.decode(as: E.self) { try await handler(value, event) }
        }
    }

    /// Runs `handler` for every event matching `filter`, logging and surviving its errors.
    public func listen(
        _ filter: TopicFilter, name: String, options: SubscriptionOptions = .default,
        handler: @escaping @Sendable (BusEvent) async throws -> Void
    ) -> Listener {
        let subscription = subscribe(filter, options: options)
        let log = logger
        let task = Task {
            do {
                for try await event in subscription {
                    do {
                        try await handler(event)
                    } catch {
                        log.error(
                            "listener failed; continuing with the next event",
                            metadata: ["listener": name, "event.topic": event.topic, "error": "\(error)"])
                    }
                }
            } catch is CancellationError {
            } catch {
                log.warning("listener stopped", metadata: ["listener": name, "error": "\(error)"])
            }
        }
        return Listener(subscription: subscription, task: task)
    }

    // MARK: Drain

    /// Waits until every event published so far has been handled by every subscriber
    /// (or dropped by its policy). For tests and orderly shutdown.
    public func drain(timeout: Duration = .seconds(10)) async throws {
        let targets = registry.withLock { r in r.queues.values.map { ($0, $0.enqueuedCount) } }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        do {
            try await Deadline.run(until: deadline, timeoutError: { DrainTimeout(pending: -1) }) {
                for (queue, target) in targets { await queue.waitSettled(target) }
            }
        } catch is DrainTimeout {
            let pending = targets.filter { !$0.0.isSettled($0.1) }.count
            throw DrainTimeout(pending: pending)
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
extension EventBus {
    // MARK: Publishing

    /// Publishes a typed event to every matching subscription. Never waits for subscribers.
    public func publish<E: Event>(_ event: E, causedBy cause: (any Cause)?) {
        publish(BusEvent(event, causedBy: cause))
    }

    /// Publishes a JSON event under a topic given at run time (wire, external plugins). A
    /// registered topic's payload must fit its declared type.
    public func publish(topic: String, payload: JSONValue, causedBy cause: (any Cause)?) throws {
        publish(try event(topic: topic, payload: payload, causedBy: cause))
    }

    /// A JSON event under a run-time topic, checked against the topic's declared payload type;
    /// its owner is the payload's `userId` when the topic's audience is `owner`.
    public func event(topic: String, payload: JSONValue, causedBy cause: (any Cause)?) throws -> BusEvent {
        try TopicFilter.validate(topic: topic)
        guard let info = topics.info(topic) else {
            return BusEvent(topic: topic, payload: .json(payload), causedBy: cause)
        }
        if let problem = info.schema.problem(with: payload) {
            throw InvalidEventPayload(topic: topic, reason: "\(problem); \(topic) carries \(info.schema)")
        }
        let owner = info.audience == .owner ? payload["userId"]?.stringValue : nil
        return BusEvent(topic: topic, payload: .json(payload), version: info.version, owner: owner, causedBy: cause)
    }

    /// Publishes a prepared event (for example one read back from the event log).
    public func publish(_ event: BusEvent) {
        eventCount.add(1, ordering: .relaxed)
        let targets = matchingQueues(event.topic)
        guard !targets.isEmpty else { return }
        var closed: [Int] = []
        var delivered = 0
        var audience: EventAudience?
        var wire = EventWireForm()
        for queue in targets {
            if queue.filtersByAudience {
                let known = audience ?? topics.audience(of: event.topic)
                audience = known
                guard queue.visibility.admits(audience: known, owner: event.owner) else { continue }
            }
            if queue.enqueue(event, wire: &wire) { delivered += 1 } else { closed.append(queue.id) }
        }
        deliveryCount.add(delivered, ordering: .relaxed)
        for id in closed { removeQueue(id) }
    }

    private func matchingQueues(_ topic: String) -> [SubscriptionQueue] {
        registry.withLock { $0.subscriptions.matching(topic) }
    }

    // MARK: Subscribing

    /// Subscribes to an exact topic or a pattern (`todos.*`, `>`).
    public func subscribe(_ pattern: String, options: SubscriptionOptions = .default) throws(InvalidTopic) -> Subscription {
        subscribe(try TopicFilter(pattern), options: options)
    }

    /// Subscribes with a parsed filter.
    public func subscribe(_ filter: TopicFilter, options: SubscriptionOptions = .default, visibility: EventVisibility = .everything) -> Subscription {
        let queue = registry.withLock { r in
            r.nextID += 1
            let queue = SubscriptionQueue(id: r.nextID, filter: filter, options: options, visibility: visibility)
            r.subscriptions.insert(queue)
            return queue
        }
        return Subscription(queue: queue) { [weak self] id in self?.removeQueue(id) }
    }

    /// Subscribes to one event type.
    public func subscribe<E: Event>(_ type: E.Type, options: SubscriptionOptions = .default) throws(InvalidTopic) -> TypedSubscription<E> {
        TypedSubscription(subscription: subscribe(try TopicFilter(E.topic), options: options))
    }

    func removeQueue(_ id: Int) {
        _ = registry.withLock { $0.subscriptions.remove(id) }
    }

    // MARK: Listeners

    /// Runs `handler` for every event of a type. A handler that throws is logged under `name`
    /// and the listener carries on; it never affects the publisher or other subscribers.
    public func listen<E: Event>(
        _ type: E.Type, name: String, options: SubscriptionOptions = .default,
        handler: @escaping @Sendable (E, BusEvent) async throws -> Void
    ) throws(InvalidTopic) -> Listener {
        listen(try TopicFilter(E.topic), name: name, options: options) { event in
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
        // Unstructured: a listener lives until its owner cancels the returned `Listener` (which holds this task).
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
        let targets = registry.withLock { r in r.subscriptions.queues.values.map { ($0, $0.enqueuedCount) } }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        do {
            try await withDeadline(deadline, timeoutError: { DrainTimeout(pending: -1) }) {
                for (queue, target) in targets { await queue.waitSettled(target) }
            }
        } catch is DrainTimeout {
            let pending = targets.filter { !$0.0.isSettled($0.1) }.count
            throw DrainTimeout(pending: pending)
        }
    }
}

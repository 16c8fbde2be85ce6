/// Runs a signed-in user's stream for as long as the session that opened it holds: the
/// session is checked again through the gates whenever the account's sessions change
/// (`SessionStreams.changed`), every `sessionRecheck` (expiry; revocations made by another
/// instance), and the stream ends after `maxUserStreamLifetime`. A failed check ends the
/// stream with the session gate's error.
struct SessionBoundStream: Sendable {
    let bus: EventBus
    /// The caller as the stream's session alone identifies it.
    let caller: Caller
    let watch: SessionStreams.Watch
    let limits: SubscribeLimits

    func run(_ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask { try await tick() }
            group.addTask { try await check() }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Wakes the check every `sessionRecheck`; ends the stream at its longest lifetime.
    private func tick() async throws {
        let end = ContinuousClock.now.advanced(by: limits.maxUserStreamLifetime)
        while true {
            let next = min(ContinuousClock.now.advanced(by: limits.sessionRecheck), end)
            try await Task.sleep(until: next, clock: .continuous)
            if ContinuousClock.now >= end {
                throw StreamLifetimeEnded(seconds: max(1, Int(limits.maxUserStreamLifetime.components.seconds)))
            }
            watch.wake.yield()
        }
    }

    private func check() async throws {
        for await _ in watch.wakes {
            try Task.checkCancellation()
            _ = try await bus.send(BusInterface.CheckSession(), as: caller)
        }
        try Task.checkCancellation()
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage
import Synchronization
import Testing
import TestSupport
@testable import Auth

/// Security review findings 2 and 3: a signed-in user's event stream lives only as long as the
/// session that opened it, for a bounded time, and asks for a bounded number of topics, in a
/// bounded number of streams per account.
extension EventContractTests {
    func dispatcher(_ h: Harness, limits: SubscribeLimits) throws -> VarlinkDispatcher {
        let dispatcher = try VarlinkDispatcher(bus: h.bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        try BusInterface.install(on: dispatcher, events: h.bus, limits: limits, replay: h.context.eventLog, isAdmin: { $0.peer?.uid == 0 })
        return dispatcher
    }

    static let sessionErrors: Set<String> = ["io.appd.Auth.Unauthenticated", "io.appd.Auth.SessionExpired", "io.appd.Auth.AccountDisabled"]

    /// Subscribes as `user`, runs `action` once the stream is open, and returns how the stream ended.
    func streamEnd(_ dispatcher: VarlinkDispatcher, _ user: Caller, after action: @escaping @Sendable () async throws -> Void) async throws -> String? {
        let replies = try await collect(dispatcher, as: user, since: nil, topics: ["todos.>"], whileCollecting: action) { _ in false }
        return replies.last?.error
    }

    @Test func aStreamEndsWhenItsSessionIsSignedOutEverywhere() async throws {
        let h = try await Harness.make()
        let dispatcher = try dispatcher(h, limits: SubscribeLimits(sessionRecheck: .seconds(3600)))
        let ada = try await h.user("ada@example.com")
        let other = try await h.signIn("ada@example.com")
        let started = ContinuousClock.now
        let end = try await streamEnd(dispatcher, ada.caller) {
            _ = try await h.bus.call(method: "io.appd.Auth.SignOutEverywhere", parameters: [:], as: other.caller)
        }
        #expect(end.map { Self.sessionErrors.contains($0) } == true, "\(String(describing: end))")
        // Woken by the revocation, not by the hour-long periodic check (the bound is far from the
        // hour and far above a loaded machine's time for the call: CI's PostgreSQL run took 5.7 s).
        #expect(ContinuousClock.now - started < .seconds(120))
        #expect(h.bus.sessionStreams.count(userID: ada.userId) == 0)
    }

    @Test func aStreamEndsWhenTheAccountIsDisabledOrItsPasswordChangesElsewhere() async throws {
        let h = try await Harness.make()
        let dispatcher = try dispatcher(h, limits: SubscribeLimits(sessionRecheck: .seconds(3600)))
        let ada = try await h.user("ada@example.com")
        let disabled = try await streamEnd(dispatcher, ada.caller) {
            _ = try await h.bus.call(method: "io.appd.Auth.DisableUser", parameters: ["email": "ada@example.com"], as: h.admin)
        }
        #expect(disabled == "io.appd.Auth.AccountDisabled")
        _ = try await h.bus.call(method: "io.appd.Auth.EnableUser", parameters: ["email": "ada@example.com"], as: h.admin)

        // A password change keeps the changing session; the stream of another session ends.
        let thief = try await h.signIn("ada@example.com")
        let owner = try await h.signIn("ada@example.com")
        let changed = try await streamEnd(dispatcher, thief.caller) {
            _ = try await h.bus.call(
                method: "io.appd.Auth.ChangePassword",
                parameters: ["currentPassword": "password for ada@example.com", "newPassword": "a new long passphrase 42"], as: owner.caller)
        }
        #expect(changed.map { Self.sessionErrors.contains($0) } == true, "\(String(describing: changed))")
    }

    @Test func aStreamEndsWhenItsAccessTokenExpires() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com")
        // The periodic check notices an expired access token (no write woke the stream).
        let dispatcher = try dispatcher(h, limits: SubscribeLimits(sessionRecheck: .milliseconds(50)))
        let expired = try await streamEnd(dispatcher, ada.caller) { h.clock.advance(seconds: 401 * 86_400) }
        #expect(expired == "io.appd.Auth.SessionExpired", "\(String(describing: expired))")
    }

    @Test func aStreamEndsAfterItsLongestLifetime() async throws {
        let h = try await Harness.make()
        let bob = try await h.user("bob@example.com")
        let dispatcher = try dispatcher(h, limits: SubscribeLimits(sessionRecheck: .seconds(3600), maxUserStreamLifetime: .milliseconds(300)))
        let ended = try await streamEnd(dispatcher, bob.caller) {}
        #expect(ended == "io.appd.Bus.StreamLifetimeEnded")
        // An admin's stream is not bound to a session: it stays.
        let admin = try await collect(
            dispatcher, as: Self.admin, since: nil, topics: ["todos.>"],
            whileCollecting: {
                try await Task.sleep(for: .milliseconds(600))
                _ = try await h.bus.call(method: "io.appd.Todos.Add", parameters: ["title": "after the lifetime"], as: bob.caller)
            }
        ) { replies in !replies.isEmpty }
        #expect(admin.first?.error == nil && admin.first?.parameters["topic"] == "todos.created")
    }

    @Test func topicsPerSubscriptionAndStreamsPerAccountAreBounded() async throws {
        let h = try await Harness.make()
        let dispatcher = try dispatcher(h, limits: SubscribeLimits(maxTopics: 4, maxStreamsPerAccount: 2))
        let ada = try await h.user("ada@example.com")
        let many = try await collect(dispatcher, as: ada.caller, since: nil, topics: ["a.1", "a.2", "a.3", "a.4", "a.5"]) { _ in false }
        #expect(many.last?.error == "org.varlink.service.InvalidParameter" && many.last?.parameters["parameter"] == "topics")

        // Two streams open; a third is refused; when one ends, a new one may open.
        let open = Mutex<[Task<Void, any Error>]>([])
        for _ in 0..<2 {
            let task = Task {
                try await dispatcher.handle(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["todos.>"]], more: true), as: ada.caller) { _ in }
            }
            open.withLock { $0.append(task) }
        }
        #expect(await eventually { h.bus.sessionStreams.count(userID: ada.userId) == 2 })
        let third = try await collect(dispatcher, as: ada.caller, since: nil, topics: ["todos.>"]) { _ in false }
        #expect(third.last?.error == "io.appd.Bus.TooManyStreams" && third.last?.parameters["limit"] == 2)
        // Another account is not affected.
        let bob = try await h.user("bob@example.com")
        let bobs = Task {
            try await dispatcher.handle(VarlinkCall(method: "io.appd.Bus.Subscribe", parameters: ["topics": ["todos.>"]], more: true), as: bob.caller) { _ in }
        }
        #expect(await eventually { h.bus.sessionStreams.count(userID: bob.userId) == 1 })
        bobs.cancel()
        open.withLock { $0.forEach { $0.cancel() } }
        #expect(await eventually { h.bus.sessionStreams.count(userID: ada.userId) == 0 })
    }
}

/// The event log as a user's replay reads it, counting the rows each read returns.
final class CountingReplay: EventReplay {
    let log: EventLog
    let rows = Mutex<(all: Int, owned: Int)>((0, 0))
    init(_ log: EventLog) { self.log = log }
    func events(after sequence: Int64, limit: Int) async throws -> [BusEvent] {
        let page = try await log.events(after: sequence, limit: limit)
        rows.withLock { $0.all += page.count }
        return page
    }
    func events(about owner: String, after sequence: Int64, limit: Int) async throws -> [BusEvent] {
        let page = try await log.events(about: owner, after: sequence, limit: limit)
        rows.withLock { $0.owned += page.count }
        return page
    }
    func append(_ event: BusEvent) async throws -> Int64 { try await log.append(event) }
}

extension EventContractTests {
    /// Security review finding 9: a user's `Subscribe(since: 0)` reads its own events through
    /// the owner index, not the whole log.
    @Test func aUsersReplayReadsOnlyItsOwnEvents() async throws {
        let h = try await Harness.make()
        let replay = CountingReplay(h.context.eventLog)
        let dispatcher = try VarlinkDispatcher(bus: h.bus, info: .init(vendor: "t", product: "t", version: "0", url: "u"))
        try BusInterface.install(on: dispatcher, events: h.bus, replay: replay, isAdmin: { $0.peer?.uid == 0 })
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        for i in 0..<300 { _ = try await h.bus.call(method: "io.appd.Todos.Add", parameters: ["title": .string("bob \(i)")], as: bob.caller) }
        _ = try await h.bus.call(method: "io.appd.Todos.Add", parameters: ["title": "ada's only"], as: ada.caller)
        let seen = try await collect(dispatcher, as: ada.caller, since: 0, topics: [">"]) { Self.titles($0).contains("ada's only") }
        #expect(Self.titles(seen) == ["ada's only"])
        // Only the owner index was read, and none of bob's rows: at most ada's own events (on
        // PostgreSQL the newest may reach the stream live, before the horizon passes them).
        let read = replay.rows.withLock { $0 }
        let adas = try await h.context.eventLog.events(about: ada.userId, after: 0, limit: 1_000).count
        #expect(read.all == 0 && read.owned <= adas && adas < 20, "\(read), \(seen.count) delivered, \(adas) about ada")
    }
}

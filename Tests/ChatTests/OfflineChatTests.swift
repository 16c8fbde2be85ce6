// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import PluginKit
import Storage
import Testing
import TestSupport
@testable import Chat

/// Conversations for offline clients (issue 32): client ids, versions that every change raises
/// (a message and its reply included), Conflict on a stale version, keyed creates, and the
/// change feed with tombstones.
@Suite(.cleansUp) struct OfflineChatTests {
    @Test func aClientsIdAndAKeyMakeACreateSafeToRepeat() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let uuid = "0b7e3c1a-8d4f-4e2b-9a6c-1f2e3d4c5b6a"
        let made = try await h.bus.send(ChatInterface.CreateConversation(title: "trip", id: uuid), as: ada).conversation
        #expect(made.id == "c_" + uuid && made.version == 1)
        #expect(try await h.bus.send(ChatInterface.CreateConversation(title: "trip", id: uuid.uppercased()), as: ada).conversation == made)
        await expectChatError("Conflict") { _ = try await h.bus.send(ChatInterface.CreateConversation(title: "other", id: uuid), as: ada) }
        await expectChatError("ValidationFailed") { _ = try await h.bus.send(ChatInterface.CreateConversation(title: "x", id: "nope"), as: ada) }
        let key = try IdempotencyKey("create-1")
        let keyed = try await h.bus.send(ChatInterface.CreateConversation(title: "keyed", id: nil), as: ada, idempotencyKey: key).conversation
        #expect(try await h.bus.send(ChatInterface.CreateConversation(title: "keyed", id: nil), as: ada, idempotencyKey: key).conversation == keyed)
        #expect(try await h.count("SELECT COUNT(*) AS n FROM chat_conversations") == 2)
    }

    @Test func aMessageRaisesTheVersionSoAStaleRenameIsAConflict() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller
        let conversation = try await h.conversation(ada, "plans")
        _ = try await h.send("hello", in: conversation.id, as: ada)
        do {
            _ = try await h.bus.send(ChatInterface.RenameConversation(id: conversation.id, title: "renamed", expectedVersion: 1), as: ada)
            Issue.record("expected a Conflict")
        } catch let error as ChatError {
            guard case .conflict(let conversation) = error else { Issue.record("\(error)"); return }
            #expect(conversation.version == 3)  // the message and its reply
        }
        let renamed = try await h.bus.send(ChatInterface.RenameConversation(id: conversation.id, title: "renamed", expectedVersion: 3), as: ada).conversation
        #expect(renamed.version == 4 && renamed.title == "renamed")
        await expectChatError("Conflict") { _ = try await h.bus.send(ChatInterface.DeleteConversation(id: conversation.id, expectedVersion: 3), as: ada) }
        _ = try await h.bus.send(ChatInterface.DeleteConversation(id: conversation.id, expectedVersion: 4), as: ada)
    }

    @Test func theFeedBringsADeviceUpToDateTombstonesIncluded() async throws {
        let h = try await Harness.make()
        let ada = try await h.user("ada@example.com").caller, bob = try await h.user("bob@example.com").caller
        let kept = try await h.conversation(ada, "kept"), doomed = try await h.conversation(ada, "doomed")
        _ = try await h.conversation(bob, "bob's")
        // Other tests' transactions on a shared PostgreSQL may hold the log back longer than a
        // pull waits under load (`EventLog.settle`); the pull's contents are what is tested here.
        try await h.settled()
        let first = try await h.bus.send(ChatInterface.Changes(cursor: nil, limit: nil), as: ada)
        #expect(Set(first.changes.compactMap(\.conversation?.id)) == [kept.id, doomed.id] && !first.more)
        _ = try await h.send("news", in: kept.id, as: ada)
        _ = try await h.bus.send(ChatInterface.DeleteConversation(id: doomed.id), as: ada)
        try await h.settled()
        let later = try await h.bus.send(ChatInterface.Changes(cursor: first.nextCursor, limit: nil), as: ada)
        #expect(later.changes.map(\.id) == [kept.id, doomed.id])
        #expect(later.changes[0].conversation?.version == 3 && later.changes[1].deleted)
        let now = try await h.bus.send(ChatInterface.Changes(cursor: later.nextCursor, limit: nil), as: ada)
        #expect(now.changes.isEmpty && now.nextCursor == later.nextCursor)
        _ = try await ChatRepository.feed.prune(h.database, olderThan: .seconds(1), now: WallTime(nanosecondsSinceEpoch: WallTime.now().nanosecondsSinceEpoch + 10_000_000_000))
        await expectChatError("ResyncRequired") { _ = try await h.bus.send(ChatInterface.Changes(cursor: first.nextCursor, limit: nil), as: ada) }
    }
}

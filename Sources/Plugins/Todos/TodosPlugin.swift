// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage
import EventDelivery

/// Owner-scoped todos (`io.appd.Todos`), and the consumer that erases a deleted account's todos.
public struct TodosPlugin: Plugin {
    public let manifest = PluginManifest(
        name: "todos", version: "0.1.0", dependencies: ["auth"], interface: TodosInterface.idl,
        events: TodosEvents.all, consumes: [AccountDeleted.self])
    public var migrations: [Migration] { TodosMigrations.all }
    let clock: @Sendable () -> WallTime
    /// Todos one account may hold (security review finding 9: storage per account is bounded).
    let maxTodosPerUser: Int
    /// How long deleted todos' tombstones stay in the change feed.
    let tombstoneRetention: Duration
    /// The bytes of text one account may keep (todos, chats, memories together; 0: no limit).
    let storageLimit: Int64

    /// `accountStorageMB`'s default: 100 MiB of text an account.
    public static let defaultStorageLimit: Int64 = 100 << 20

    public init(
        maxTodosPerUser: Int = 10_000, tombstoneRetention: Duration = .seconds(90 * 86_400), storageLimit: Int64 = TodosPlugin.defaultStorageLimit,
        clock: @escaping @Sendable () -> WallTime = { .now() }
    ) {
        self.clock = clock
        self.maxTodosPerUser = max(1, maxTodosPerUser)
        self.tombstoneRetention = tombstoneRetention
        self.storageLimit = max(0, storageLimit)
    }

    func service(_ database: any Database) -> TodosService {
        TodosService(repository: SQLTodosRepository(database: database, storageLimit: storageLimit), clock: clock, maxTodosPerUser: maxTodosPerUser)
    }

    public func start(_ context: PluginContext) async throws {
        let service = service(context.database)
        let repository = service.repository
        let handlers = context.handlers
        handlers.handle(TodosInterface.Add.self) { c, e in
            .init(todo: try await service.add(owner: try owner(e), title: c.title, notes: c.notes, dueAt: c.dueAt, id: c.id, causedBy: e))
        }
        handlers.handle(TodosInterface.Get.self) { c, e in .init(todo: try await repository.get(owner: try owner(e), id: c.id)) }
        handlers.handle(TodosInterface.List.self) { c, e in
            try await service.list(owner: try owner(e), filter: c.filter, cursor: c.cursor, limit: c.limit)
        }
        handlers.handle(TodosInterface.Update.self) { c, e in
            .init(
                todo: try await service.update(
                    owner: try owner(e), id: c.id, title: c.title, notes: c.notes, dueAt: c.dueAt, expected: c.expectedVersion, causedBy: e))
        }
        handlers.handle(TodosInterface.Complete.self) { c, e in
            .init(todo: try await repository.setDone(owner: try owner(e), id: c.id, done: true, expected: c.expectedVersion, now: service.now, causedBy: e))
        }
        handlers.handle(TodosInterface.Reopen.self) { c, e in
            .init(todo: try await repository.setDone(owner: try owner(e), id: c.id, done: false, expected: c.expectedVersion, now: service.now, causedBy: e))
        }
        let files = TodoFiles(bus: context.bus, logger: context.logger)
        handlers.handle(TodosInterface.Delete.self) { c, e in
            let user = try owner(e)
            let gone = try await repository.delete(owner: user, id: c.id, expected: c.expectedVersion, now: service.now, causedBy: e)
            if gone.hadFiles { await files.release(gone.id, owner: user) }
            return Empty()
        }
        handlers.handle(TodosInterface.ClearCompleted.self) { _, e in
            let user = try owner(e)
            let cleared = try await repository.clearCompleted(owner: user, now: service.now, causedBy: e)
            for todo in cleared.withFiles { await files.release(todo, owner: user) }
            return .init(deleted: cleared.deleted)
        }
        handlers.handle(TodosInterface.Attach.self) { c, e in
            let user = try owner(e)
            let todo = try await repository.fullID(owner: user, id: c.id)
            try await files.attach(c.fileId, to: todo, owner: user)
            return .init(todo: try await repository.setAttachment(owner: user, id: todo, file: c.fileId, attach: true, expected: c.expectedVersion, now: service.now, causedBy: e))
        }
        handlers.handle(TodosInterface.Detach.self) { c, e in
            let user = try owner(e)
            let todo = try await repository.setAttachment(owner: user, id: c.id, file: c.fileId, attach: false, expected: c.expectedVersion, now: service.now, causedBy: e)
            await files.release(todo.id, owner: user, keeping: todo.attachments ?? [])
            return .init(todo: todo)
        }
        handlers.handle(TodosInterface.Changes.self) { c, e in try await service.changes(owner: try owner(e), cursor: c.cursor, limit: c.limit) }
    }

    public func services(_ context: PluginContext) -> [any Service] {
        let repository = service(context.database).repository
        // Deleted todos' tombstones are pruned after the retention.
        let tombstones = SQLTodosRepository.feed.retention(context.database, keep: tombstoneRetention, logger: context.logger)
        // A deleted account's todos go too, even if the account was deleted while this plugin
        // was stopped (durable consumer; deleting twice is harmless).
        do {
            return [
                try DurableConsumer(name: "todos.accountDeleted", consuming: AccountDeleted.self, log: context.eventLog, bus: context.bus, logger: context.logger) {
                    deleted, _ in _ = try await repository.deleteAll(owner: deleted.userId)
                },
                tombstones,
            ]
        } catch {
            return [FailedService(name: "todos.accountDeleted", error: error), tombstones]
        }
    }

}

/// The signed-in user the gates established (they ran before any todos handler).
private func owner(_ envelope: Envelope) throws(TodosError) -> String { try envelope.signedInUser(or: TodosError.notFound) }

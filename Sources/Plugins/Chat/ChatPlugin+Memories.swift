// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

extension ChatPlugin {
    /// Models and memories: `Models`, `ListMemories`, `AddMemory`, `UpdateMemory`,
    /// `DeleteMemory`, `ClearMemories`.
    func registerMemories(_ service: ChatService, on handlers: HandlerSet) {
        let repository = service.repository, models = options.models, limit = options.maxMemoriesPerUser
        handlers.handle(ChatInterface.Models.self) { _, e in
            let user = try owner(e)
            var usable: [String] = []
            // An entitlement that cannot be checked now (payments unavailable) counts as not held.
            for model in models.all where (try? await service.mayUse(model, user)) == true { usable.append(model.name) }
            return .init(models: models.all, usable: usable)
        }
        handlers.handle(ChatInterface.ListMemories.self) { _, e in
            let user = try owner(e)
            return .init(memories: try await repository.memories(owner: user), enabled: await service.memoryEnabled(user))
        }
        handlers.handle(ChatInterface.AddMemory.self) { c, e in
            .init(
                memory: try await repository.addMemory(
                    owner: try owner(e), id: try ChatService.newRecordID("mem_"), text: try service.memoryText(c.text), limit: limit, now: service.now, causedBy: e))
        }
        handlers.handle(ChatInterface.UpdateMemory.self) { c, e in
            .init(memory: try await repository.updateMemory(owner: try owner(e), id: c.id, text: try service.memoryText(c.text), now: service.now, causedBy: e))
        }
        handlers.handle(ChatInterface.DeleteMemory.self) { c, e in
            try await repository.deleteMemory(owner: try owner(e), id: c.id, causedBy: e)
            return Empty()
        }
        handlers.handle(ChatInterface.ClearMemories.self) { _, e in .init(deleted: try await repository.clearMemories(owner: try owner(e), causedBy: e)) }
    }
}

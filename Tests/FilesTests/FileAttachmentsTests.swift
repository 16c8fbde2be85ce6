// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Auth
import Bus
import Contracts
@testable import Files
import PluginKit
import TestSupport
import Testing
import Todos

/// Files that go with another plugin's item: the avatar (auth over the bus, as appd wires it)
/// and the in-process commands chat and todos use.
@Suite(.cleansUp) struct FileAttachmentsTests {
    @Test func anAvatarIsTheUsersOwnImageAndTheOldOneGoesWhenItIsReplaced() async throws {
        let h = try await Harness.files { $0.thumbnailSizes = [] }
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let first = try #require(await h.upload(Samples.jpeg(), type: "image/jpeg", as: ada).file)
        let second = try #require(await h.upload(Samples.png(width: 20, height: 20), type: "image/png", as: ada).file)
        let report = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: ada).file)

        let set = try await h.bus.send(AuthInterface.SetAvatar(fileId: first.id), as: ada.caller)
        #expect(set.user.avatarFileId == first.id)
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: ada.caller).user.avatarFileId == first.id)
        #expect(try await h.bus.send(FilesInterface.Get(id: first.id), as: ada.caller).file.usedBy == "auth.avatar")
        // While it is the picture it goes with the profile, not on its own.
        await #expect(throws: FilesError.inUse(usedBy: "auth.avatar")) { try await h.bus.send(FilesInterface.Delete(id: first.id), as: ada.caller) }

        // Another's file, a PDF, nothing: refused, the picture unchanged.
        let bobs = try #require(await h.upload(Samples.jpeg(), type: "image/jpeg", as: bob).file)
        for (id, reason) in [(bobs.id, "is not a file of yours"), (report.id, "only an image"), ("f_AAAAAAAAAAAAAAAAAAAAAA", "is not a file of yours")] {
            do {
                _ = try await h.bus.send(AuthInterface.SetAvatar(fileId: id), as: ada.caller)
                Issue.record("\(id) became the avatar")
            } catch let AuthError.validationFailed(field, why) {
                #expect(field == "fileId" && why.contains(reason), "\(why)")
            }
        }
        #expect(try await h.bus.send(AuthInterface.WhoAmI(), as: ada.caller).user.avatarFileId == first.id)

        // Replaced: the first picture is deleted (bytes and row, with files.deleted).
        #expect(try await h.bus.send(AuthInterface.SetAvatar(fileId: second.id), as: ada.caller).user.avatarFileId == second.id)
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.Get(id: first.id), as: ada.caller) }
        #expect(try await h.files.store.read(id: first.id) == nil)
        let deleted = try await h.loggedEvents(limit: 100).filter { $0.topic == FileDeleted.topic }
        #expect(deleted.count == 1 && deleted.first?.owner == ada.userId)
        // Removed: no picture, and the file went with it.
        #expect(try await h.bus.send(AuthInterface.SetAvatar(fileId: nil), as: ada.caller).user.avatarFileId == nil)
        #expect(try await h.bus.send(FilesInterface.List(), as: ada.caller).files.map(\.id) == [report.id])
    }

    @Test func anItemsFilesAreReadAndReleasedWithIt() async throws {
        let h = try await Harness.files { $0.thumbnailSizes = [] }
        let ada = try await h.user("ada@example.com")
        let photo = try #require(await h.upload(Samples.png(width: 20, height: 20), type: "image/png", as: ada).file)
        let other = try #require(await h.upload(Samples.jpeg(), type: "image/jpeg", as: ada).file)
        let attached = try await h.bus.send(AttachFile(owner: ada.userId, id: photo.id, item: "chat.c_1", images: true), as: .plugin("chat"))
        #expect(attached.usedBy == "chat.c_1")
        // Attaching again to the same item is a no-op; to another is refused.
        #expect(try await h.bus.send(AttachFile(owner: ada.userId, id: photo.id, item: "chat.c_1"), as: .plugin("chat")).usedBy == "chat.c_1")
        await #expect(throws: FilesError.inUse(usedBy: "chat.c_1")) {
            try await h.bus.send(AttachFile(owner: ada.userId, id: photo.id, item: "todos.t_1"), as: .plugin("todos"))
        }
        // Read by the plugin, within its bound.
        let read = try await h.bus.send(ReadFile(owner: ada.userId, id: photo.id, thumbnail: 1024, maxBytes: 1 << 20), as: .plugin("chat"))
        #expect(read.contentType == "image/png" && Int64(read.bytes.count) == photo.bytes)
        await #expect(throws: FilesError.tooLarge(limitBytes: 10)) {
            try await h.bus.send(ReadFile(owner: ada.userId, id: photo.id, maxBytes: 10), as: .plugin("chat"))
        }
        await #expect(throws: FilesError.notFound) {
            try await h.bus.send(ReadFile(owner: "u_someoneElse", id: photo.id, maxBytes: 1 << 20), as: .plugin("chat"))
        }
        // The item goes: its files go; the others stay.
        #expect(try await h.bus.send(ReleaseFiles(owner: ada.userId, item: "chat.c_1"), as: .plugin("chat")).deleted == 1)
        #expect(try await h.bus.send(FilesInterface.List(), as: ada.caller).files.map(\.id) == [other.id])
        #expect(try await h.files.store.read(id: photo.id) == nil)
    }

    @Test func aTodosAttachmentsGoWithItWhenDetachedDeletedOrCleared() async throws {
        var options = FilesOptions(directory: try TestScope.required(by: "the files harness").directory("appd-todo-files") + "/files")
        options.thumbnailSizes = []
        let chosen = options
        let h = try await PluginHarness.make { clock in [try AuthPlugin.testing(clock: clock), TodosPlugin(), try FilesPlugin(options: chosen)] }
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let photo = try #require(await h.upload(Samples.jpeg(), type: "image/jpeg", as: ada).file)
        let report = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: ada).file)
        let todo = try await h.bus.send(TodosInterface.Add(title: "taxes"), as: ada.caller).todo

        var attached = try await h.bus.send(TodosInterface.Attach(id: todo.id, fileId: photo.id, expectedVersion: todo.version), as: ada.caller).todo
        attached = try await h.bus.send(TodosInterface.Attach(id: todo.id, fileId: report.id), as: ada.caller).todo
        #expect(attached.attachments == [photo.id, report.id] && attached.version == todo.version + 2)
        // Again: nothing changes.
        #expect(try await h.bus.send(TodosInterface.Attach(id: todo.id, fileId: report.id), as: ada.caller).todo == attached)
        #expect(try await h.bus.send(FilesInterface.Get(id: report.id), as: ada.caller).file.usedBy == "todos.\(todo.id)")
        // Another's file, a stale version: refused.
        let bobs = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: bob).file)
        await #expect(throws: TodosError.self) { try await h.bus.send(TodosInterface.Attach(id: todo.id, fileId: bobs.id), as: ada.caller) }
        await #expect(throws: TodosError.self) {
            try await h.bus.send(TodosInterface.Detach(id: todo.id, fileId: photo.id, expectedVersion: todo.version), as: ada.caller)
        }
        // Detached: deleted.
        let detached = try await h.bus.send(TodosInterface.Detach(id: todo.id, fileId: photo.id), as: ada.caller).todo
        #expect(detached.attachments == [report.id])
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.Get(id: photo.id), as: ada.caller) }
        // The todo deleted: its files too.
        _ = try await h.bus.send(TodosInterface.Delete(id: todo.id), as: ada.caller)
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.Get(id: report.id), as: ada.caller) }
        #expect(try await h.files.store.read(id: report.id) == nil)

        // Cleared with the completed todos.
        let done = try await h.bus.send(TodosInterface.Add(title: "done"), as: ada.caller).todo
        let scan = try #require(await h.upload(Samples.pdf, type: "application/pdf", as: ada, name: "scan.pdf").file)
        _ = try await h.bus.send(TodosInterface.Attach(id: done.id, fileId: scan.id), as: ada.caller)
        _ = try await h.bus.send(TodosInterface.Complete(id: done.id), as: ada.caller)
        #expect(try await h.bus.send(TodosInterface.ClearCompleted(), as: ada.caller).deleted == 1)
        #expect(try await h.bus.send(FilesInterface.List(), as: ada.caller).files.isEmpty)
    }
}

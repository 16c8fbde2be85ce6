// SPDX-License-Identifier: Apache-2.0
import AppdClient
import BusCore
import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport

/// AppdClient's files against the real appd binary: up, down, by a signed URL, refused.
@Suite(.serialized, .timeLimit(.minutes(2))) struct AppdClientFilesTests {
    @Test func aFileGoesUpComesBackAndOpensByASignedURLWithoutAToken() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let base = URL(string: "http://127.0.0.1:\(port)")!
        let appd = AppdClient(baseURL: base)
        _ = try await appd.call(AuthInterface.SignUp(email: "ada@example.com", password: "correct horse battery"))
        let report = Data("%PDF-1.7\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)
        let file = try await appd.upload(report, contentType: "application/pdf", name: "report ü.pdf", idempotencyKey: "c5a1e7f0-upload")
        #expect(file.name == "report ü.pdf" && file.bytes == Int64(report.count) && file.contentType == "application/pdf")
        // The same key again is the same file; the list holds one.
        #expect(try await appd.upload(report, contentType: "application/pdf", name: "report ü.pdf", idempotencyKey: "c5a1e7f0-upload") == file)
        #expect(try await appd.call(FilesInterface.List()).files == [file])
        #expect(try await appd.download(file: file.id) == report)
        // A loader without the token opens it by the signed URL.
        let url = try await appd.signedURL(forFile: file.id, seconds: 60)
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200 && data == report)
        // Typed refusals.
        await #expect(throws: FilesError.self) { _ = try await appd.upload(Data("<html></html>".utf8), contentType: "text/html") }
        await #expect(throws: FilesError.notFound) { _ = try await appd.download(file: "f_AAAAAAAAAAAAAAAAAAAAAA") }
        _ = try await appd.call(FilesInterface.Delete(id: file.id))
        await #expect(throws: FilesError.notFound) { _ = try await appd.download(file: file.id) }
        #expect(await daemon.stop() == 0)
    }

    /// The README's iOS walk-through: a photo as the avatar, then in a chat message.
    @Test func aPhotoBecomesTheAvatarAndGoesToTheChat() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let appd = AppdClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        _ = try await appd.auth.signUp(email: "ada@example.com", password: "correct horse battery")
        _ = try await appd.auth.completeOnboarding()
        // A real 2 × 2 PNG.
        let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEUlEQVR4nGP4z8AARGDiPwMAHfAD/aAzCYkAAAAASUVORK5CYII=")!
        let avatar = try await appd.upload(png, contentType: "image/png", name: "me.png")
        let user = try await appd.auth.setAvatar(fileId: avatar.id)
        #expect(user.avatarFileId == avatar.id)
        // The session's user is the updated one (what a profile screen shows).
        var states = await appd.authStates().makeAsyncIterator()
        guard case .signedIn(let shown)? = await states.next() else { Issue.record("not signed in"); return }
        #expect(shown.avatarFileId == avatar.id)
        #expect(try await appd.download(file: try #require(user.avatarFileId)) == png)

        let photo = try await appd.upload(png, contentType: "image/png", name: "cat.png")
        let conversation = try await appd.chat.createConversation(title: "look")
        var stored: ChatMessage?
        for try await reply in appd.chat.send(conversationId: conversation.id, text: "What is this?", images: [photo.id]) {
            if let message = reply.message { stored = message }
        }
        #expect(stored?.status == "complete")
        let history = try await appd.chat.history(conversationId: conversation.id).messages
        #expect(history.first?.images == [photo.id])
        // The photo goes with the conversation.
        try await appd.chat.delete(conversationId: conversation.id)
        await #expect(throws: FilesError.notFound) { _ = try await appd.download(file: photo.id) }
        #expect(await daemon.stop() == 0)
    }

    /// A large file goes up in pieces with progress; the upload is cut (the task cancelled, as
    /// when the app is killed) and a new client goes on from where the server says it stopped.
    @Test func aLargeUploadCutShortGoesOnFromWhereTheServerSaysWithANewClient() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let base = URL(string: "http://127.0.0.1:\(port)")!
        let tokens = InMemoryTokenStore()
        let first = AppdClient(baseURL: base, tokenStore: tokens)
        _ = try await first.auth.signUp(email: "ada@example.com", password: "correct horse battery")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("appd-resumable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let payload = Data("%PDF-1.7\n".utf8) + Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) })
        let file = folder.appendingPathComponent("scan.pdf")
        try payload.write(to: file)
        let journal = UploadJournal(file: folder.appendingPathComponent("journal.json"))

        let seen = SeenProgress()
        // Unstructured: the upload's own task, cancelled from inside (as an app's ends when it is killed).
        let cut = Task {
            try await first.upload(contentsOf: file, contentType: "application/pdf", journal: journal, pieceBytes: 256 * 1024) { sent, _ in
                seen.add(sent)
                // Cut after the fourth piece.
                if sent >= 4 * 256 * 1024 { withUnsafeCurrentTask { $0?.cancel() } }
            }
        }
        await #expect(throws: CancellationError.self) { _ = try await cut.value }
        #expect(seen.values.last == Int64(4 * 256 * 1024))
        #expect(journal.keys.count == 1, "the unfinished upload is remembered")

        let second = AppdClient(baseURL: base, tokenStore: tokens)
        let resumed = SeenProgress()
        let stored = try await second.upload(contentsOf: file, contentType: "application/pdf", journal: journal, pieceBytes: 256 * 1024) { sent, _ in resumed.add(sent) }
        #expect(resumed.values.first == Int64(4 * 256 * 1024), "it went on from where the server said, not from 0")
        #expect(resumed.values.last == Int64(payload.count))
        #expect(stored.bytes == Int64(payload.count) && stored.name == "scan.pdf")
        #expect(try await second.download(file: stored.id) == payload)
        #expect(journal.keys.isEmpty, "a finished upload leaves no entry")
        #expect(await daemon.stop() == 0)
    }
}

/// The values a progress closure was given, in order.
final class SeenProgress: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [Int64] = []
    func add(_ value: Int64) { lock.withLock { seen.append(value) } }
    var values: [Int64] { lock.withLock { seen } }
}

extension UploadJournal {
    /// The files it remembers uploads of.
    var keys: [String] {
        guard let data = try? Data(contentsOf: file), let all = try? JSONDecoder().decode([String: String].self, from: data) else { return [] }
        return Array(all.keys)
    }
}

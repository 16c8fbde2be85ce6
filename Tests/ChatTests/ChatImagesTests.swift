// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Contracts
import Crypto
import HTTP
import PluginKit
import Testing
import TestSupport
@testable import Auth
@testable import Chat
@testable import Files
@testable import Payments
@testable import Settings

/// Images in chat messages: uploaded to the files plugin, attached to the conversation, and
/// given to an OpenAI-compatible provider (a scripted one on loopback) as image parts.
@Suite(.cleansUp) struct ChatImagesTests {
    /// A real 2 × 2 RGB PNG.
    static let png: [UInt8] = {
        let hex = "89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000001149444154789c63f8cfc0004460e23f03001df003fda03309890000000049454e44ae426082"
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }()

    static func harness(_ server: FakeOpenAIServer, imageBaseURL: String? = nil) async throws -> PluginHarness {
        let directory = try TestScope.required(by: "the chat images harness").directory("appd-chat-files") + "/files"
        var options = ChatPlugin.Options()
        options.imageBaseURL = imageBaseURL
        let provider = try OpenAIProvider(options: .init(baseURL: server.baseURL, model: "vision-model", apiKey: "sk-test"))
        return try await PluginHarness.make { _ in
            let chat = try ChatPlugin(options: options, provider: provider)
            return [
                try AuthPlugin.testing(), PaymentsPlugin(options: .init()), chat, SettingsPlugin(declared: chat.manifest.settings),
                try FilesPlugin(options: FilesOptions(directory: directory)),
            ]
        }
    }

    static func upload(_ bytes: [UInt8], as user: TestUser, in h: PluginHarness) async throws -> StoredFile {
        var fields = HTTPHeaderFields()
        fields["authorization"] = "Bearer \(user.accessToken)"
        fields["content-type"] = "image/png"
        let request = HTTPServerRequest(method: "POST", target: "/files", headers: fields, contentLength: bytes.count)
        let routes = h.plugin(FilesPlugin.self).httpRoutes(h.context)
        let route = try #require(PluginHTTPRoute.resolve(request.path, in: routes))
        let response = await route.handler(request, bytes)
        #expect(response.status == 201, "\(String(decoding: response.body, as: UTF8.self))")
        return try JSONParser.parse(response.body)["file"]!.decode(as: StoredFile.self)
    }

    static func send(_ h: PluginHarness, _ conversation: String, _ text: String, images: [String], as caller: Caller) async throws -> ChatMessage? {
        var final: ChatMessage?
        for try await reply in try await h.bus.stream(ChatInterface.Send(conversationId: conversation, text: text, images: images), as: caller) {
            if let message = reply.message { final = message }
        }
        return final
    }

    static func array(_ value: JSONValue?) -> [JSONValue]? {
        if case .array(let items) = value { return items }
        return nil
    }

    /// The JSON body of a request the fake server recorded.
    static func body(of request: String) throws -> JSONValue {
        let bytes = Array(request.utf8)
        let end = try #require(bytes.firstRange(of: [13, 10, 13, 10]))
        return try JSONParser.parse(Array(bytes[end.upperBound...]))
    }

    @Test func anImageReachesTheModelAsAnImagePartAndGoesWithTheConversation() async throws {
        let server = FakeOpenAIServer { _ in [.send(FakeOpenAIServer.head(chunked: false)), .send(FakeOpenAIServer.reply(["A", " red", " square."]))] }
        defer { server.stop() }
        let h = try await Self.harness(server)
        let ada = try await h.user("ada@example.com"), bob = try await h.user("bob@example.com")
        let photo = try await Self.upload(Self.png, as: ada, in: h)
        let conversation = try await h.bus.send(ChatInterface.CreateConversation(title: "look"), as: ada.caller).conversation

        let reply = try await Self.send(h, conversation.id, "What is this?", images: [photo.id], as: ada.caller)
        #expect(reply?.text == "A red square.")
        // The request carried the text and the image's bytes as an image part.
        let request = try #require(server.requests.first?.request)
        let body = try Self.body(of: request)
        let user = try #require(Self.array(body["messages"])?.last)
        #expect(user["role"]?.stringValue == "user")
        let parts = try #require(Self.array(user["content"]))
        #expect(parts.first?["type"]?.stringValue == "text" && parts.first?["text"]?.stringValue == "What is this?")
        let stored = try #require(try await h.plugin(FilesPlugin.self).store.read(id: photo.id))
        #expect(parts.count == 2 && parts[1]["type"]?.stringValue == "image_url")
        #expect(parts[1]["image_url"]?["url"]?.stringValue == "data:image/png;base64," + Base64.encode(stored, padded: true))
        // The message shows it; the file goes with the conversation.
        let history = try await h.bus.send(ChatInterface.History(conversationId: conversation.id), as: ada.caller).messages
        #expect(history.first?.images == [photo.id] && history.last?.images == nil)
        #expect(try await h.bus.send(FilesInterface.Get(id: photo.id), as: ada.caller).file.usedBy == "chat.\(conversation.id)")

        // Another's file, five images, one twice: refused before anything is stored.
        let bobs = try await Self.upload(Self.png, as: bob, in: h)
        for images in [[bobs.id], Array(repeating: photo.id, count: 5), [photo.id, photo.id]] {
            do {
                _ = try await Self.send(h, conversation.id, "and this?", images: images, as: ada.caller)
                Issue.record("\(images) was sent")
            } catch let ChatError.validationFailed(field, _) {
                #expect(field == "images")
            }
        }
        #expect(try await h.bus.send(ChatInterface.History(conversationId: conversation.id), as: ada.caller).messages.count == 2)
        // A follow-up sends the earlier image again (it is in the context).
        _ = try await Self.send(h, conversation.id, "Which colour?", images: [], as: ada.caller)
        #expect(server.requests.count == 2 && server.requests[1].request.contains("data:image/png;base64,"))

        // Deleting the conversation deletes its images.
        _ = try await h.bus.send(ChatInterface.DeleteConversation(id: conversation.id), as: ada.caller)
        await #expect(throws: FilesError.notFound) { try await h.bus.send(FilesInterface.Get(id: photo.id), as: ada.caller) }
        #expect(try await h.plugin(FilesPlugin.self).store.read(id: photo.id) == nil)
    }

    @Test func withAPublicAddressTheModelGetsASignedURLThatOpensTheImage() async throws {
        let server = FakeOpenAIServer { _ in [.send(FakeOpenAIServer.head(chunked: false)), .send(FakeOpenAIServer.reply(["ok"]))] }
        defer { server.stop() }
        let h = try await Self.harness(server, imageBaseURL: "https://appd.example")
        let ada = try await h.user("ada@example.com")
        let photo = try await Self.upload(Self.png, as: ada, in: h)
        let conversation = try await h.bus.send(ChatInterface.CreateConversation(title: nil), as: ada.caller).conversation
        _ = try await Self.send(h, conversation.id, "See?", images: [photo.id], as: ada.caller)
        let request = try #require(server.requests.first?.request)
        let body = try Self.body(of: request)
        let url = try #require(Self.array(Self.array(body["messages"])?.last?["content"])?.last?["image_url"]?["url"]?.stringValue)
        #expect(url.hasPrefix("https://appd.example/files/\(photo.id)?"), "\(url)")
        // The path opens the file with no bearer token, as the provider would fetch it.
        let target = String(url.dropFirst("https://appd.example".count))
        let routes = h.plugin(FilesPlugin.self).httpRoutes(h.context)
        let request2 = HTTPServerRequest(method: "GET", target: target, headers: HTTPHeaderFields(), contentLength: 0)
        let route = try #require(PluginHTTPRoute.resolve(request2.path, in: routes))
        let got = await route.handler(request2, [])
        #expect(got.status == 200 && Int64(got.body.count) == photo.bytes)
    }
}

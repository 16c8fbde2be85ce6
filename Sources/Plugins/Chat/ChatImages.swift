// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// How a conversation's images reach the model. By default as `data:` URLs of their bytes
/// (the 1024-pixel thumbnail when the file has one): the model needs no way back to appd. With
/// `baseURL` (`chatImageBaseURL`, appd's public address) as signed URLs under it, valid for
/// `urlSeconds`: smaller requests, but the provider must reach appd.
struct ChatImages: Sendable {
    /// Images one message may carry.
    static let perMessage = 4
    /// Images one request carries: the newest this many of the history (older ones leave
    /// their message's text only).
    static let perRequest = 8
    /// The thumbnail asked for in place of a larger image.
    static let thumbnail = 1024
    /// The most bytes of one image sent as a data URL (an image with more and no thumbnail is
    /// left out of the request).
    static let maxDataBytes = 8 << 20
    static let urlSeconds = 600

    var baseURL: String?

    /// The files plugin's item a conversation's images go with.
    static func item(_ conversation: String) -> String { "chat." + conversation }

    /// A URL the model can open for the owner's image `file`; nil when the file is gone or too
    /// large to send.
    func url(of file: String, owner: String, bus: EventBus) async throws -> String? {
        do {
            if let baseURL {
                let signed = try await bus.send(SignFileURL(owner: owner, id: file, seconds: Self.urlSeconds), as: .plugin("chat"))
                return baseURL + signed.path
            }
            let read = try await bus.send(ReadFile(owner: owner, id: file, thumbnail: Self.thumbnail, maxBytes: Self.maxDataBytes), as: .plugin("chat"))
            return "data:\(read.contentType);base64,\(Base64.encode(read.bytes, padded: true))"
        } catch FilesError.notFound {
            return nil
        } catch FilesError.tooLarge {
            return nil
        } catch is NoHandler {
            return nil
        }
    }

    /// The file ids a Send gives: at most `perMessage`, each once.
    static func ids(_ given: [String]?) throws(ChatError) -> [String] {
        guard let given, !given.isEmpty else { return [] }
        guard given.count <= perMessage else { throw .validation("images", "holds at most \(perMessage) images") }
        guard Set(given).count == given.count else { throw .validation("images", "names an image twice") }
        for id in given where id.isEmpty || id.utf8.count > 64 || id.contains(",") {
            throw .validation("images", "holds \(id.utf8.count > 64 ? "an id of \(id.utf8.count) bytes" : "\"\(id)\""), not a file id")
        }
        return given
    }
}

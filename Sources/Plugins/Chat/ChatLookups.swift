// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

/// What chat asks other plugins over the bus: whether a user holds an entitlement (payments),
/// a user's setting in effect (settings), and the images of a conversation (files). Closures,
/// so tests can answer without them.
struct ChatLookups: Sendable {
    var entitled: @Sendable (_ user: String, _ entitlement: String) async throws -> Bool
    var setting: @Sendable (_ user: String, _ key: String, _ scope: String?) async throws -> SettingValue
    /// Makes the user's image `file` go with `conversation`; throws `ChatError` when it cannot.
    var attachImage: @Sendable (_ user: String, _ file: String, _ conversation: String) async throws -> Void
    /// A URL the model can open for the user's image `file` (`ChatImages`); nil when it is gone.
    var imageURL: @Sendable (_ user: String, _ file: String) async throws -> String?
    /// Deletes the images that went with `conversation`.
    var releaseImages: @Sendable (_ user: String, _ conversation: String) async throws -> Void

    static func bus(_ bus: EventBus, images: ChatImages) -> ChatLookups {
        ChatLookups(
            entitled: { user, entitlement in try await bus.send(CheckEntitlement(userID: user, entitlement: entitlement), as: .plugin("chat")).entitled },
            setting: { user, key, scope in try await bus.send(ReadSetting(userID: user, key: key, scope: scope), as: .plugin("chat")).value },
            attachImage: { user, file, conversation in
                do {
                    _ = try await bus.send(AttachFile(owner: user, id: file, item: ChatImages.item(conversation), images: true), as: .plugin("chat"))
                } catch {
                    guard let why = AttachFile.refusal(of: file, error) else { throw error }
                    throw ChatError.validation("images", why)
                }
            },
            imageURL: { user, file in try await images.url(of: file, owner: user, bus: bus) },
            releaseImages: { user, conversation in
                do { _ = try await bus.send(ReleaseFiles(owner: user, item: ChatImages.item(conversation)), as: .plugin("chat")) } catch is NoHandler {}
            })
    }
}

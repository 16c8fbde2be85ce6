// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

extension AuthService {
    /// The item of the files plugin the profile picture goes with (`AttachFile`).
    static let avatarItem = "auth.avatar"

    /// Makes the owner's image `fileID` the profile picture (nil: none), then deletes the
    /// previous one: a picture goes with the profile (`ReleaseFiles`). The files plugin answers
    /// over the bus; without it a picture cannot be set.
    func setAvatar(userID: String, fileID: String?, bus: EventBus, causedBy cause: Envelope) async throws -> User {
        if let fileID {
            do {
                _ = try await bus.send(AttachFile(owner: userID, id: fileID, item: Self.avatarItem, images: true), as: .plugin("auth"), causedBy: cause)
            } catch {
                guard let why = AttachFile.refusal(of: fileID, error) else { throw error }
                throw AuthError.validationFailed(field: "fileId", reason: why)
            }
        }
        guard let record = try await repository.setAvatar(userID: userID, fileID: fileID, now: now) else { throw AuthError.unauthenticated }
        // The previous picture is deleted; one left behind by a failure here (its usedBy still
        // says auth.avatar) is deleted by the next SetAvatar.
        _ = try? await bus.send(ReleaseFiles(owner: userID, item: Self.avatarItem, keeping: fileID.map { [$0] } ?? []), as: .plugin("auth"), causedBy: cause)
        return record.user
    }
}

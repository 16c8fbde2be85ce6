// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit

/// What chat asks other plugins over the bus: whether a user holds an entitlement (payments)
/// and a user's setting in effect (settings). Closures, so tests can answer without them.
struct ChatLookups: Sendable {
    var entitled: @Sendable (_ user: String, _ entitlement: String) async throws -> Bool
    var setting: @Sendable (_ user: String, _ key: String, _ scope: String?) async throws -> SettingValue

    static func bus(_ bus: EventBus) -> ChatLookups {
        ChatLookups(
            entitled: { user, entitlement in try await bus.send(CheckEntitlement(userID: user, entitlement: entitlement), as: .plugin("chat")).entitled },
            setting: { user, key, scope in try await bus.send(ReadSetting(userID: user, key: key, scope: scope), as: .plugin("chat")).value })
    }
}

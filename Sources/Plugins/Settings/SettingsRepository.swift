// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage

/// The settings table: values owner-scoped, each change versioned and evented in one
/// transaction.
struct SettingsRepository: Sendable {
    let database: any Database

    /// A stored value (nil `value`: reset) with its version.
    struct Stored: Sendable {
        var value: SettingValue?
        var version: Int64
        var updatedAt: Int64
    }

    static func stored(_ row: Row) -> Stored? {
        guard let version = row.integer("version"), let updated = row.integer("updated_at") else { return nil }
        let value = row.text("value").flatMap { try? JSONParser.parse(Array($0.utf8)) }.flatMap(SettingValue.init(json:))
        return Stored(value: value, version: version, updatedAt: updated)
    }

    static func read(_ tx: any Transaction, owner: String, key: String, scope: String) throws -> Stored? {
        try tx.query("SELECT value, version, updated_at FROM settings_values WHERE owner = ? AND key = ? AND scope = ?", [.text(owner), .text(key), .text(scope)])
            .first.flatMap(stored)
    }

    /// The value in effect for `key` at `scope` ('' for the account's own): the value set
    /// there, else for an item the account's, else the default. The version is that of the
    /// value at `scope` (0 when nothing was ever set there).
    static func setting(_ tx: any Transaction, owner: String, key: String, scope: String, default: SettingValue, stored: Stored?) throws -> Setting {
        let shownScope = scope.isEmpty ? nil : scope
        let version = stored?.version ?? 0, updated = stored.map { WallTime(nanosecondsSinceEpoch: $0.updatedAt).rfc3339 }
        if let value = stored?.value { return Setting(key: key, scope: shownScope, value: value, isDefault: false, version: version, updatedAt: updated) }
        if !scope.isEmpty, let value = try read(tx, owner: owner, key: key, scope: "")?.value {
            return Setting(key: key, scope: shownScope, value: value, isDefault: false, version: version, updatedAt: updated)
        }
        return Setting(key: key, scope: shownScope, value: `default`, isDefault: true, version: version, updatedAt: updated)
    }

    /// The values in effect for each declaration at `scope`.
    func settings(owner: String, scope: String, for declarations: [SettingDeclaration]) async throws -> [Setting] {
        try await database.read { tx in
            try declarations.map { declaration in
                try Self.setting(
                    tx, owner: owner, key: declaration.key, scope: scope, default: declaration.default,
                    stored: try Self.read(tx, owner: owner, key: declaration.key, scope: scope))
            }
        }
    }

    /// Writes `value` (nil: reset) at the next version unless `expected` differs from the
    /// version as it stands (0: never set). Refuses a new row past `limit` rows for the owner.
    func write(
        owner: String, declaration: SettingDeclaration, scope: String, value: SettingValue?, expected: Int64?, now: Int64, limit: Int,
        causedBy cause: (any Cause)?
    ) async throws -> Setting {
        let key = declaration.key
        return try await database.write { tx in
            let existing = try Self.read(tx, owner: owner, key: key, scope: scope)
            if let expected, expected != (existing?.version ?? 0) {
                throw SettingsError.conflict(setting: try Self.setting(tx, owner: owner, key: key, scope: scope, default: declaration.default, stored: existing))
            }
            let version = (existing?.version ?? 0) + 1
            let text: SQLValue = value.map { .text(String(decoding: JSONWriter.bytes($0.json), as: UTF8.self)) } ?? .null
            if existing == nil {
                let held = try tx.query("SELECT COUNT(*) AS n FROM settings_values WHERE owner = ?", [.text(owner)]).first?.integer("n") ?? 0
                guard held < Int64(limit) else {
                    throw SettingsError.validation("scope", "this account holds \(limit) set values, as many as it may; reset some first")
                }
                try tx.execute(
                    "INSERT INTO settings_values (owner, key, scope, value, version, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    [.text(owner), .text(key), .text(scope), text, .integer(version), .integer(now)])
            } else {
                try tx.execute(
                    "UPDATE settings_values SET value = ?, version = ?, updated_at = ? WHERE owner = ? AND key = ? AND scope = ?",
                    [text, .integer(version), .integer(now), .text(owner), .text(key), .text(scope)])
            }
            let written = try Self.setting(
                tx, owner: owner, key: key, scope: scope, default: declaration.default, stored: Stored(value: value, version: version, updatedAt: now))
            try tx.append(SettingChanged(userId: owner, setting: written), causedBy: cause)
            try tx.stageReply(SettingsInterface.SettingReply(setting: written))
            return written
        }
    }

    /// Erases a deleted account's settings.
    func erase(_ owner: String) async throws {
        try await database.write { tx in try tx.execute("DELETE FROM settings_values WHERE owner = ?", [.text(owner)]) }
    }
}

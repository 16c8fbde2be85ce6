// SPDX-License-Identifier: Apache-2.0
import PluginKit
import Storage

/// The settings plugin's table: one migration per schema version, applied in order by the
/// plugin host. A shipped migration is never edited; a change is a new version.
enum SettingsMigrations {
    static let all = [
        // One row per value a user set (scope '' is the account's own value). A reset keeps the
        // row with no value, so its version goes on rising and a device holding an old version
        // cannot overwrite a value set after the reset.
        Migration(
            plugin: "settings", version: 1,
            sql: """
                CREATE TABLE settings_values (
                  owner TEXT NOT NULL,
                  key TEXT NOT NULL,
                  scope TEXT NOT NULL,
                  value TEXT,
                  version INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL,
                  PRIMARY KEY (owner, key, scope)
                );
                """)
    ]
}

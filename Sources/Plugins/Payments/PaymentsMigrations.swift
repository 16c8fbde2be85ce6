// SPDX-License-Identifier: Apache-2.0
import Storage

/// The payments plugin's tables: one migration per schema version, applied in order by the
/// plugin host when the plugin starts (the version reached is recorded per plugin). A shipped
/// migration is never edited; a change is a new version.
enum PaymentsMigrations {
    static let all = [
        Migration(
            plugin: "payments", version: 1,
            sql: """
                CREATE TABLE payments_events (
                  provider TEXT NOT NULL,
                  event_id TEXT NOT NULL,
                  type TEXT NOT NULL,
                  event_time INTEGER NOT NULL,
                  received_at INTEGER NOT NULL,
                  body TEXT NOT NULL,
                  PRIMARY KEY (provider, event_id)
                );
                CREATE TABLE payments_event_users (
                  provider TEXT NOT NULL,
                  event_id TEXT NOT NULL,
                  user_id TEXT NOT NULL,
                  role TEXT NOT NULL,
                  PRIMARY KEY (provider, event_id, user_id, role)
                );
                CREATE INDEX payments_event_users_user ON payments_event_users(user_id);
                CREATE TABLE payments_entitlements (
                  user_id TEXT NOT NULL,
                  entitlement TEXT NOT NULL,
                  source TEXT NOT NULL,
                  active INTEGER NOT NULL,
                  product TEXT,
                  expires_at INTEGER,
                  will_renew INTEGER NOT NULL,
                  last_event_time INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL,
                  PRIMARY KEY (user_id, entitlement, source)
                );
                CREATE INDEX payments_entitlements_expiry ON payments_entitlements(active, expires_at);
                CREATE TABLE payments_history (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  user_id TEXT NOT NULL,
                  entitlement TEXT NOT NULL,
                  change TEXT NOT NULL,
                  source TEXT NOT NULL,
                  product TEXT,
                  reference TEXT,
                  at INTEGER NOT NULL
                );
                CREATE INDEX payments_history_user ON payments_history(user_id, entitlement, seq);
                CREATE TABLE payments_grants (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT,
                  user_id TEXT NOT NULL,
                  entitlement TEXT NOT NULL,
                  action TEXT NOT NULL,
                  expires_at INTEGER,
                  reason TEXT NOT NULL,
                  actor TEXT NOT NULL,
                  at INTEGER NOT NULL
                );
                CREATE INDEX payments_grants_user ON payments_grants(user_id, seq);
                CREATE TABLE payments_meters (
                  user_id TEXT NOT NULL,
                  meter TEXT NOT NULL,
                  period_start INTEGER NOT NULL,
                  used INTEGER NOT NULL,
                  PRIMARY KEY (user_id, meter)
                );
                CREATE TABLE payments_customers (
                  provider TEXT NOT NULL,
                  customer_id TEXT NOT NULL,
                  user_id TEXT NOT NULL,
                  PRIMARY KEY (provider, customer_id)
                );
                """),
        // What a revoke ends: 'admin' (an administrator's grant only, the default from now on)
        // or 'all' (every source, paid ones too; what every earlier revoke did).
        Migration(
            plugin: "payments", version: 2,
            sql: """
                ALTER TABLE payments_grants ADD COLUMN scope TEXT NOT NULL DEFAULT 'all';
                """),
        // Each account's StoreKit appAccountToken (App Store purchases are bound to accounts
        // in payments_customers, provider 'appstore', by original transaction id).
        Migration(
            plugin: "payments", version: 3,
            sql: """
                CREATE TABLE payments_appstore_tokens (
                  user_id TEXT PRIMARY KEY,
                  token TEXT NOT NULL UNIQUE
                );
                """),
    ]
}

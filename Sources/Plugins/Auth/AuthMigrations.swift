// SPDX-License-Identifier: Apache-2.0
import Storage

/// The auth plugin's tables: one migration per schema version, applied in order by the
/// plugin host when the plugin starts (the version reached is recorded per plugin). A shipped
/// migration is never edited; a change is a new version.
enum AuthMigrations {
    static let all = [
        Migration(
            plugin: "auth", version: 1,
            sql: """
                CREATE TABLE auth_users (
                  id TEXT PRIMARY KEY,
                  email TEXT NOT NULL UNIQUE COLLATE NOCASE,
                  password_hash TEXT NOT NULL,
                  display_name TEXT,
                  onboarded_at INTEGER,
                  disabled INTEGER NOT NULL DEFAULT 0,
                  created_at INTEGER NOT NULL,
                  updated_at INTEGER NOT NULL
                );
                CREATE TABLE auth_sessions (
                  id INTEGER PRIMARY KEY,
                  user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
                  family TEXT NOT NULL,
                  access_digest TEXT NOT NULL UNIQUE,
                  access_expires_at INTEGER NOT NULL,
                  refresh_digest TEXT NOT NULL UNIQUE,
                  refresh_expires_at INTEGER NOT NULL,
                  created_at INTEGER NOT NULL,
                  revoked_at INTEGER
                );
                CREATE INDEX auth_sessions_user ON auth_sessions(user_id);
                CREATE INDEX auth_sessions_family ON auth_sessions(family);
                CREATE TABLE auth_rotated_refresh (
                  digest TEXT PRIMARY KEY,
                  family TEXT NOT NULL
                );
                CREATE TABLE auth_attempts (
                  email TEXT PRIMARY KEY COLLATE NOCASE,
                  failures INTEGER NOT NULL,
                  window_start INTEGER NOT NULL
                );
                """),
        Migration(
            plugin: "auth", version: 2,
            sql: """
                CREATE TABLE auth_reset_tokens (
                  digest TEXT PRIMARY KEY,
                  user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
                  expires_at INTEGER NOT NULL,
                  used_at INTEGER
                );
                """),
        // Reset tokens are minted on demand for a request (IssueResetToken), never carried by
        // an event. Tokens of the old table were mailed from a live event; they stop working.
        Migration(
            plugin: "auth", version: 3,
            sql: """
                CREATE TABLE auth_reset_requests (
                  id TEXT PRIMARY KEY,
                  user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
                  expires_at INTEGER NOT NULL,
                  token_digest TEXT UNIQUE,
                  issued_at INTEGER,
                  used_at INTEGER,
                  created_at INTEGER NOT NULL
                );
                CREATE INDEX auth_reset_requests_user ON auth_reset_requests(user_id);
                DROP TABLE auth_reset_tokens;
                """),
        // Throttling counts from the last failure, and each attempt is reserved before its
        // password is checked (see `reserveAttempt`).
        Migration(
            plugin: "auth", version: 4,
            sql: """
                ALTER TABLE auth_attempts ADD COLUMN last_failure_at INTEGER NOT NULL DEFAULT 0;
                UPDATE auth_attempts SET last_failure_at = window_start;
                ALTER TABLE auth_rotated_refresh ADD COLUMN rotated_at INTEGER NOT NULL DEFAULT 0;
                """),
        // Notices sent per account or address in a window (reset requests, repeated sign-ups):
        // keyed by a digest of the email or the user id, so unknown addresses are not stored.
        Migration(
            plugin: "auth", version: 5,
            sql: """
                CREATE TABLE auth_notices (
                  key TEXT PRIMARY KEY,
                  count INTEGER NOT NULL,
                  window_start INTEGER NOT NULL
                );
                """),
        // Sign-in with Apple and Google: identities (provider, subject) linked to accounts, and
        // whether an account's email is verified. An account made from an identity has no
        // password: its password_hash is the empty string, which no password matches.
        Migration(
            plugin: "auth", version: 6,
            sql: """
                CREATE TABLE auth_identities (
                  provider TEXT NOT NULL,
                  subject TEXT NOT NULL,
                  user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
                  email TEXT,
                  email_verified INTEGER NOT NULL DEFAULT 0,
                  created_at INTEGER NOT NULL,
                  last_used_at INTEGER NOT NULL,
                  PRIMARY KEY (provider, subject),
                  UNIQUE (user_id, provider)
                );
                ALTER TABLE auth_users ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0;
                """),
        // Apple's server side: its refresh token per identity (AES-256-GCM sealed with a key
        // that is not in the database), tokens waiting to be revoked (an account deleted or an
        // identity unlinked; the service retries until Apple confirms), the server-to-server
        // notifications already handled (each acts once), which provider opened a session (a
        // revoked consent ends just those), and whether Apple stopped forwarding mail.
        Migration(
            plugin: "auth", version: 7,
            sql: """
                ALTER TABLE auth_identities ADD COLUMN refresh_token TEXT;
                ALTER TABLE auth_identities ADD COLUMN email_disabled INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE auth_sessions ADD COLUMN opened_by TEXT;
                CREATE TABLE auth_token_revocations (
                  id INTEGER PRIMARY KEY,
                  provider TEXT NOT NULL,
                  token TEXT NOT NULL,
                  attempts INTEGER NOT NULL DEFAULT 0,
                  next_attempt_at INTEGER NOT NULL,
                  last_error TEXT,
                  created_at INTEGER NOT NULL
                );
                CREATE INDEX auth_token_revocations_due ON auth_token_revocations(next_attempt_at);
                CREATE TABLE auth_provider_notifications (
                  key TEXT PRIMARY KEY,
                  received_at INTEGER NOT NULL
                );
                """),
        // Email verification: a request (and its durable event) first, the token minted later
        // for the mailer's 'auth.verificationTokens' capability; only its digest is stored.
        Migration(
            plugin: "auth", version: 8,
            sql: """
                CREATE TABLE auth_email_verifications (
                  id TEXT PRIMARY KEY,
                  user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
                  email TEXT NOT NULL,
                  expires_at INTEGER NOT NULL,
                  token_digest TEXT UNIQUE,
                  issued_at INTEGER,
                  used_at INTEGER,
                  created_at INTEGER NOT NULL
                );
                CREATE INDEX auth_email_verifications_user ON auth_email_verifications(user_id);
                """),
        // Guest accounts: no credentials and no address. A guest's email column holds its own
        // id (the column is NOT NULL UNIQUE, and an id has no '@', so it never matches an
        // address); the wire shows "" and guest: true. last_seen_at (sign-ins and refreshes)
        // finds idle guests to delete.
        Migration(
            plugin: "auth", version: 9,
            sql: """
                ALTER TABLE auth_users ADD COLUMN guest INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE auth_users ADD COLUMN last_seen_at INTEGER;
                UPDATE auth_users SET last_seen_at = updated_at;
                CREATE INDEX auth_users_guest_seen ON auth_users(guest, last_seen_at);
                """),
        // A password set while the account's address was not proven: whoever set it may not own
        // the address, so linking an Apple or Google identity by email drops it.
        Migration(
            plugin: "auth", version: 10,
            sql: """
                ALTER TABLE auth_users ADD COLUMN password_unproven INTEGER NOT NULL DEFAULT 0;
                UPDATE auth_users SET password_unproven = 1 WHERE email_verified = 0 AND password_hash <> '';
                """),
        // The pair a refresh handed out, sealed with a key only the refresh token it replaced
        // derives (`RotationSeal`), kept for the reuse interval: a duplicate `Refresh` on any
        // instance gets the same pair. Cleared once the interval is over (the partial index
        // finds the few still held).
        Migration(
            plugin: "auth", version: 11,
            sql: """
                ALTER TABLE auth_rotated_refresh ADD COLUMN handed_out TEXT;
                CREATE INDEX auth_rotated_refresh_held ON auth_rotated_refresh(rotated_at) WHERE handed_out IS NOT NULL;
                """),
        // The profile picture: a file of the files plugin (`SetAvatar`).
        Migration(plugin: "auth", version: 12, sql: "ALTER TABLE auth_users ADD COLUMN avatar_file_id TEXT"),
    ]
}

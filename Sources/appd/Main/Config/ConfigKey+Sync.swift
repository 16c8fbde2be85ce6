// SPDX-License-Identifier: Apache-2.0
/// The keys of offline clients' sync: how long idempotency keys and deletion tombstones are
/// kept (part of `ConfigKey.all`).
extension ConfigKey {
    static let sync: [ConfigKey] = [
        integer(
            "idempotencyKeyHours", "--idempotency-key-hours",
            "Hours a keyed write's outcome is kept for retries (default: 24); a retry after that is a new write."
        ) { $0.idempotencyKeyHours = $1 },
        integer(
            "tombstoneDays", "--tombstone-days",
            "Days a deletion is kept for change feeds (default: 90); a client away longer must resync (ResyncRequired)."
        ) { $0.tombstoneDays = $1 },
    ]
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Storage

/// Password-check throttling, per account and per account-and-origin (security review
/// finding 11): wrong passwords from one origin slow down that origin's attempts on the
/// account after a few, and every origin's only after many more, so an attacker elsewhere
/// cannot lock the owner out with a handful of guesses.
extension AuthRepository {
    /// What a password check may do.
    enum AttemptDecision: Sendable, Equatable {
        /// Go on and check the password; the attempt already counts as a failure until
        /// `settleSuccess` says otherwise.
        case allowed
        /// Too many failures: try again after this many seconds.
        case wait(seconds: Int)
    }

    /// One throttle counter: its key and the failures it allows before attempts must wait.
    struct AttemptKey: Sendable {
        var key: String
        var free: Int
        /// A row whose presence (a sign-in that succeeded from this origin within
        /// `knownOriginDays`) lets the attempt past this key's wait: distributed guessing that
        /// slows the whole account cannot lock the owner out from where they signed in before.
        var waivedBy: String? = nil
    }

    /// How long a successful sign-in makes its origin known to the account.
    static let knownOriginNanoseconds: Int64 = 90 * 86_400 * 1_000_000_000

    /// The counters one attempt on `email` from `origin` goes through (emails are one account
    /// in any case, on every database engine).
    static func attemptKeys(email: String, origin: String, freePerOrigin: Int, freePerAccount: Int) -> (account: AttemptKey, origin: AttemptKey) {
        let account = email.lowercased()
        return (
            AttemptKey(key: account, free: freePerAccount, waivedBy: account + " known " + origin),
            AttemptKey(key: account + " " + origin, free: freePerOrigin)
        )
    }

    /// Decides and records an attempt in one write, so parallel guesses are counted one after
    /// the other. For each key, after `free` failures each attempt must wait
    /// 2^(failures - free) seconds (capped at `window`) from the last failure; failures older
    /// than `window` are forgotten. An attempt any key refuses is refused and not counted.
    func reserveAttempt(_ keys: [AttemptKey], now: Int64, window: Int64) async throws -> AttemptDecision {
        // Changes no account or session: a stream of wrong passwords does not empty the cache.
        try await database.write { tx in
            var counts: [Int] = []
            var wait: Int64 = 0
            for key in keys {
                let row = try tx.query("SELECT failures, last_failure_at FROM auth_attempts WHERE email = ?", [.text(key.key)]).first
                var failures = Int(row?.integer("failures") ?? 0)
                let last = row?.integer("last_failure_at") ?? 0
                if now - last >= window { failures = 0 }
                let waived =
                    try key.waivedBy.map { known in
                        let seen = try tx.query("SELECT last_failure_at FROM auth_attempts WHERE email = ?", [.text(known)]).first?.integer("last_failure_at")
                        return seen.map { now - $0 < Self.knownOriginNanoseconds } ?? false
                    } ?? false
                if failures >= key.free && !waived {
                    let backoff = min(Int64(1) << Int64(min(failures - key.free, 40)), window / 1_000_000_000) * 1_000_000_000
                    if now < last + backoff { wait = max(wait, last + backoff - now) }
                }
                counts.append(failures)
            }
            if wait > 0 { return .wait(seconds: Int((wait + 999_999_999) / 1_000_000_000)) }
            for (key, failures) in zip(keys, counts) {
                try tx.execute(
                    """
                    INSERT INTO auth_attempts (email, failures, window_start, last_failure_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT(email) DO UPDATE SET failures = excluded.failures, last_failure_at = excluded.last_failure_at
                    """,
                    [.text(key.key), .integer(Int64(failures + 1)), .integer(now), .integer(now)])
            }
            return .allowed
        }
    }

    /// The password was right: the origin's failures are forgotten, this attempt no longer
    /// counts against the account, and the origin is known to it (its `waivedBy` row, whose
    /// `last_failure_at` holds the time of this success).
    func settleSuccess(account: AttemptKey, origin: AttemptKey, now: Int64) async throws {
        try await database.write { tx in
            try tx.execute("DELETE FROM auth_attempts WHERE email = ?", [.text(origin.key)])
            if let known = account.waivedBy {
                try tx.execute(
                    """
                    INSERT INTO auth_attempts (email, failures, window_start, last_failure_at) VALUES (?, 0, ?, ?)
                    ON CONFLICT(email) DO UPDATE SET last_failure_at = excluded.last_failure_at
                    """,
                    [.text(known), .integer(now), .integer(now)])
            }
            try tx.execute("UPDATE auth_attempts SET failures = failures - 1 WHERE email = ? AND failures > 0", [.text(account.key)])
        }
    }
}

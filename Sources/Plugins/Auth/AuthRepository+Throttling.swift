import Bus
import Storage

/// Sign-in throttling, per account.
extension AuthRepository {
    /// What a sign-in attempt may do.
    enum AttemptDecision: Sendable, Equatable {
        /// Go on and check the password; the attempt already counts as a failure until
        /// `clearFailures` says otherwise.
        case allowed
        /// Too many failures: try again after this many seconds.
        case wait(seconds: Int)
    }

    /// Decides and records an attempt in one write, so parallel guesses are counted one after
    /// the other and at most `free` of them are ever checked before the back-off starts. After
    /// `free` failures each attempt must wait 2^(failures - free) seconds (capped at `window`)
    /// from the last failure; failures older than `window` are forgotten.
    func reserveAttempt(email: String, now: Int64, free: Int, window: Int64) async throws -> AttemptDecision {
        // Changes no account or session: a stream of wrong passwords does not empty the cache.
        try await database.write { tx in
            let row = try tx.query("SELECT failures, last_failure_at FROM auth_attempts WHERE email = ?", [.text(email)]).first
            var failures = Int(row?.integer("failures") ?? 0)
            let last = row?.integer("last_failure_at") ?? 0
            if now - last >= window { failures = 0 }
            if failures >= free {
                let wait = min(Int64(1) << Int64(min(failures - free, 40)), window / 1_000_000_000) * 1_000_000_000
                if now < last + wait {
                    return .wait(seconds: Int((last + wait - now + 999_999_999) / 1_000_000_000))
                }
            }
            try tx.execute(
                """
                INSERT INTO auth_attempts (email, failures, window_start, last_failure_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(email) DO UPDATE SET failures = excluded.failures, last_failure_at = excluded.last_failure_at
                """,
                [.text(email), .integer(Int64(failures + 1)), .integer(now), .integer(now)])
            return .allowed
        }
    }

    func clearFailures(email: String) async throws {
        try await database.write { tx in try tx.execute("DELETE FROM auth_attempts WHERE email = ?", [.text(email)]) }
    }
}

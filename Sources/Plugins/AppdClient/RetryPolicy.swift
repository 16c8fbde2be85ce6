// SPDX-License-Identifier: Apache-2.0
/// How a call that may be sent again — a read (`Command.readsOnly`), or an idempotent write
/// (its method declares `idempotent`; it carries an idempotency key, the same on every
/// attempt) — is retried when the network fails or appd is busy (429, 503, 504, or 409
/// IdempotencyKeyInUse): exponential backoff with jitter, or the server's `Retry-After` when it
/// gives one. Other calls are never retried by the client.
public struct RetryPolicy: Sendable {
    /// Attempts after the first.
    public var retries: Int
    public var initialDelay: Duration
    public var maxDelay: Duration

    public init(retries: Int = 3, initialDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10)) {
        self.retries = max(0, retries)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    public static let none = RetryPolicy(retries: 0)

    /// The wait before retry `attempt` (1-based), honouring `Retry-After` seconds up to `maxDelay`.
    func delay(attempt: Int, retryAfter: String?) -> Duration {
        if let retryAfter, let seconds = Int(retryAfter.filter { $0 != " " }), seconds >= 0 {
            return min(.seconds(seconds), maxDelay)
        }
        let exponential = initialDelay * (1 << min(attempt - 1, 16))
        let capped = min(exponential, maxDelay)
        // Full jitter between half and all of it, so clients that failed together spread out.
        return capped / 2 + capped / 2 * Double.random(in: 0...1)
    }

    static func isRetryable(status: Int, error name: String?) -> Bool {
        status == 429 || status == 503 || status == 504 || (status == 409 && name == "io.appd.Bus.IdempotencyKeyInUse")
    }
}

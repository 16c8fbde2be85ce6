// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// Revokes the provider tokens queued when an account was deleted or an identity unlinked
/// (Apple: App Store guideline 5.1.1(v)). The queue is in the database, written in the same
/// transaction as the deletion, so nothing is lost to a crash or to Apple being down: each
/// token is retried with backoff (30 s, doubling, at most a day) until Apple answers, and
/// dropped after `maxAttempts` with an error logged. Supervised by the plugin host.
struct TokenRevocationService: Service {
    let repository: AuthRepository
    let apple: (client: AppleClient, sealer: AESGCM)
    let clock: @Sendable () -> WallTime
    let interval: Duration
    let logger: Logger
    var maxAttempts = 30
    var name: String { "auth.tokenRevocation" }

    func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                try await revokeDue()
                try await Task.sleep(for: interval)
            }
        }
    }

    /// Revokes what is due now; returns how many were revoked.
    @discardableResult
    func revokeDue() async throws -> Int {
        var revoked = 0
        for queued in try await repository.dueRevocations(now: clock().nanosecondsSinceEpoch, limit: 50) {
            guard queued.provider == "apple",
                let sealed = Base64.decode(queued.token),
                let token = apple.sealer.open(sealed, associatedData: AuthService.tokenContext).map({ String(decoding: $0, as: UTF8.self) })
            else {
                // Sealed with another key (tokenEncryptionKey changed) or not Apple's: it can never be sent.
                logger.error("a queued token cannot be opened with the configured tokenEncryptionKey; dropped", metadata: ["provider": "\(queued.provider)"])
                try await repository.finishRevocation(id: queued.id)
                continue
            }
            let now = clock().nanosecondsSinceEpoch
            switch await apple.client.revoke(refreshToken: token, now: now) {
            case .revoked:
                revoked += 1
                try await repository.finishRevocation(id: queued.id)
                logger.info("a provider token was revoked", metadata: ["provider": "apple"])
            case .refused(let reason):
                try await repository.finishRevocation(id: queued.id)
                logger.notice("Apple refused a token revocation for good (already revoked or expired)", metadata: ["reason": "\(reason)"])
            case .failed(let reason):
                guard queued.attempts + 1 < maxAttempts else {
                    try await repository.finishRevocation(id: queued.id)
                    logger.error("a token revocation failed \(maxAttempts) times; given up", metadata: ["reason": "\(reason)"])
                    continue
                }
                let backoff = min(Int64(30) << min(queued.attempts, 12), 86_400)
                try await repository.retryRevocation(id: queued.id, at: now + backoff * 1_000_000_000, error: reason)
                logger.warning("a token revocation failed; it will be retried", metadata: ["reason": "\(reason)", "retryInSeconds": "\(backoff)"])
            }
        }
        return revoked
    }
}

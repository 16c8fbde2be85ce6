// SPDX-License-Identifier: Apache-2.0
import BusCore
import Synchronization
import Runtime

/// Leases across instances: a session-level advisory lock per name, held on one connection of
/// this instance. PostgreSQL releases it when that connection ends — when the instance stops,
/// is killed, or loses the link — so another instance takes over within `retry`.
final class PostgresLeases: Sendable {
    private let connection: PostgresConnectionBox
    private let namespace: PostgresNamespace
    private let logger: Logger
    /// One thread: the lease connection is used by one call at a time.
    private let pool = BlockingPool(name: "appd-pg-lease", threads: 1, queueLimit: 256)
    /// How often a waiting instance tries again, and a holder checks its link.
    let retry: Duration

    init(connection: PostgresConnectionBox, namespace: PostgresNamespace, logger: Logger, retry: Duration = .seconds(1)) {
        self.connection = connection
        self.namespace = namespace
        self.logger = logger
        self.retry = retry
    }

    func holding(_ name: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        while true {
            try Task.checkCancellation()
            guard let held = try? await tryAcquire(name) else {
                try await Task.sleep(for: retry)
                continue
            }
            logger.info("holding the lease", metadata: ["lease": "\(name)"])
            let outcome: Result<Bool, any Error>
            do {
                outcome = .success(
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        group.addTask {
                            try await body(); return true
                        }
                        group.addTask { [self] in
                            // Watches the link: a lease whose connection broke is gone.
                            while await stillHeld(generation: held) { try await Task.sleep(for: retry) }
                            return false
                        }
                        defer { group.cancelAll() }
                        return try await group.next() ?? true
                    })
            } catch {
                outcome = .failure(error)
            }
            if case .success(false) = outcome, !Task.isCancelled {
                logger.warning("lost the lease (its database link broke); stopping its work and waiting to take it again", metadata: ["lease": "\(name)"])
                continue
            }
            await release(name)
            _ = try outcome.get()
            return
        }
    }

    /// The lease connection's generation (`opens`) when the lease was taken, or nil when another instance holds it.
    private func tryAcquire(_ name: String) async throws -> Int? {
        try await pool.run { [self] in
            let link = try connection.open()
            let got = try link.run("SELECT pg_try_advisory_lock(?, hashtext(?)) AS got", [.integer(namespace.key), .text(name)]).rows.first?.integer("got") == 1
            return got ? connection.opens : nil
        }
    }

    private func stillHeld(generation held: Int) async -> Bool {
        (try? await pool.run { [self] in
            let link = try connection.open()
            _ = try link.run("SELECT 1", [])
            return connection.opens == held
        }) ?? false
    }

    private func release(_ name: String) async {
        _ = try? await pool.run { [self] in
            try connection.open().run("SELECT pg_advisory_unlock(?, hashtext(?))", [.integer(namespace.key), .text(name)])
        }
    }

    func close() async {
        _ = try? await pool.run { [self] in connection.close() }
        pool.close()
    }
}

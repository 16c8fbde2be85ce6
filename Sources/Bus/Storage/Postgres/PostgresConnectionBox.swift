// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A connection used by one thread at a time, opened again after the link broke.
final class PostgresConnectionBox: @unchecked Sendable {  // safe: only the owning pool's one job at a time touches it
    private var connection: PostgresConnection?
    private var closed = false
    /// How many times a connection was opened: session state (LISTEN, advisory locks) taken
    /// on an earlier one is gone.
    private(set) var opens: Int
    private let connect: @Sendable () throws -> PostgresConnection

    /// `connection` nil: connects on first use.
    init(_ connection: PostgresConnection?, connect: @escaping @Sendable () throws -> PostgresConnection) {
        self.connection = connection
        self.opens = connection == nil ? 0 : 1
        self.connect = connect
    }

    /// The connection, reconnected if its link broke; throws `closed` after `close`.
    func open() throws -> PostgresConnection {
        guard !closed else { throw DatabaseWork.closed }
        if let connection, connection.isOpen { return connection }
        connection = nil
        let fresh = try connect()
        connection = fresh
        opens += 1
        return fresh
    }

    /// Opens a transaction with `begin`. A link that broke while idle (server restart, failover,
    /// a killed backend) shows only when used: then it connects again and begins once more —
    /// nothing of the caller's has run yet, so that is safe.
    func beginTransaction(_ begin: String) throws -> PostgresConnection {
        let first = try open()
        do {
            try first.executeScript(begin)
            return first
        } catch  where !first.isOpen {
            let second = try open()
            try second.executeScript(begin)
            return second
        }
    }

    /// Rolls back whatever is open (a no-op outside a transaction or on a broken link).
    func rollBack() {
        guard let connection, connection.isOpen else { return }
        try? connection.control("ROLLBACK")
    }

    func close() {
        closed = true
        connection = nil
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A storage failure, with a kind callers can act on; renders itself on the wire.
public struct StorageError: WireError, Equatable {
    public enum Kind: String, Sendable {
        /// Another writer held the database past the busy timeout: retry.
        case busy
        /// A constraint (unique, foreign key, check) refused the change.
        case constraint
        /// The disk is full: free space, then retry.
        case full
        /// The file is damaged or not a database.
        case corrupt
        /// The database cannot be written (permissions, read-only file system).
        case readOnly
        /// An I/O error from the operating system.
        case io
        /// The database is closed (shutting down).
        case closed
        /// The schema in the file is newer than this appd understands.
        case newerSchema
        /// Anything else SQLite reported.
        case other
    }

    public let kind: Kind
    public let message: String
    /// PostgreSQL's SQLSTATE, when the server reported the failure.
    var sqlState: String?

    /// A PostgreSQL serialization failure or deadlock: the transaction lost a race with a
    /// concurrent one and is to be run again as a whole.
    var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var wireName: String { "io.appd.Bus.StorageFailed" }
    public var wireParameters: [String: JSONValue] { ["kind": .string(kind.rawValue)] }
    public var description: String { "storage \(kind.rawValue): \(message)" }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// Pipeline mode: several statements in one round trip (libpq 14+).
extension PostgresConnection {
    /// Runs statements all in one round trip (libpq's pipeline mode; one by one with a libpq
    /// older than 14): each one's rows. `prepared`: each text is prepared once per connection
    /// (the first time costs a round trip of its own) and sent by name, as `run` does; else each
    /// is sent as text (for texts that vary with their data). The first that fails throws its
    /// error, and those after it did not run — inside a transaction, which is then aborted.
    func runPipelined(_ statements: [(sql: String, parameters: [SQLValue])], prepared: Bool = false) throws(StorageError) -> [[Row]] {
        guard let handle else { throw StorageError(kind: .io, message: "the PostgreSQL connection is closed") }
        guard statements.count > 1, appd_pq_has_pipeline() == 1 else {
            var all: [[Row]] = []
            for statement in statements {
                all.append(prepared ? try run(statement.sql, statement.parameters).rows : try runUnprepared(statement.sql, statement.parameters))
            }
            return all
        }
        if prepared, self.prepared.count + statements.count > Self.preparedLimit {
            // Room for all of them first: emptying the cache midway would drop names already taken.
            try executeScript("DEALLOCATE ALL")
            self.prepared.removeAll()
        }
        let names = try statements.map { (statement) throws(StorageError) -> UnsafeMutablePointer<CChar>? in
            prepared ? strdup(try prepare(statement.sql, parameters: Int32(statement.parameters.count), on: handle)) : nil
        }
        defer { for name in names { free(name) } }
        let marshaled = try statements.map { (statement) throws(StorageError) in try Marshaled(statement.parameters) }
        let texts = statements.map { strdup(Self.numberPlaceholders($0.sql)) }
        defer { for text in texts { free(text) } }
        var results = [OpaquePointer?](repeating: nil, count: statements.count)
        let nameList: [UnsafePointer<CChar>?] = names.map { $0.map { UnsafePointer($0) } }
        let commands: [UnsafePointer<CChar>?] = texts.map { $0.map { UnsafePointer($0) } }
        let counts = marshaled.map(\.count)
        let types: [UnsafePointer<Oid>?] = marshaled.map { UnsafePointer($0.types) }
        let values: [UnsafePointer<UnsafePointer<CChar>?>?] = marshaled.map { UnsafePointer($0.values) }
        let lengths: [UnsafePointer<Int32>?] = marshaled.map { UnsafePointer($0.lengths) }
        let formats: [UnsafePointer<Int32>?] = marshaled.map { UnsafePointer($0.formats) }
        // The buffers must outlive the call (an optimised build may free them after their last use).
        let sent = withExtendedLifetime(marshaled) {
            appd_pq_pipeline(handle, Int32(statements.count), nameList, commands, counts, types, values, lengths, formats, &results)
        }
        defer { for result in results where result != nil { appd_PQclear(result) } }
        var all: [[Row]] = []
        for (i, result) in results.enumerated() {
            guard result != nil else { break }
            if appd_PQresultStatus(result) == PGRES_PIPELINE_ABORTED { break }
            if prepared, appd_PQresultStatus(result) == PGRES_FATAL_ERROR, appd_pq_sqlstate(result).map({ String(cString: $0) }) == "0A000" {
                // A table it reads changed shape (a migration): the transaction is aborted, so
                // the name cannot be deallocated now; it is prepared again under a new name next
                // time (the old one goes with the next DEALLOCATE ALL).
                self.prepared[statements[i].sql] = nil
            }
            all.append(try outcome(result).rows)
        }
        guard sent == 0, all.count == statements.count else {
            throw StorageError(kind: .io, message: "lost the PostgreSQL connection in a pipeline: \(String(cString: appd_PQerrorMessage(handle)).trimmingWhitespace())")
        }
        return all
    }

    /// One statement's parameters in C buffers that live as long as this (a pipeline sends
    /// several statements before any of them is answered).
    final class Marshaled {
        let count: Int32
        let types: UnsafeMutablePointer<Oid>
        let values: UnsafeMutablePointer<UnsafePointer<CChar>?>
        let lengths: UnsafeMutablePointer<Int32>
        let formats: UnsafeMutablePointer<Int32>
        private var owned: [UnsafeMutablePointer<CChar>] = []

        init(_ parameters: [SQLValue]) throws(StorageError) {
            let n = max(1, parameters.count)
            count = Int32(parameters.count)
            types = .allocate(capacity: n)
            values = .allocate(capacity: n)
            lengths = .allocate(capacity: n)
            formats = .allocate(capacity: n)
            var owned: [UnsafeMutablePointer<CChar>] = []
            let copied = try PostgresConnection.withParameters(parameters) { types, values, lengths, formats in
                for i in 0..<parameters.count {
                    self.types[i] = types[i]
                    self.lengths[i] = lengths[i]
                    self.formats[i] = formats[i]
                    if let value = values[i] {
                        let length = Int(lengths[i])
                        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: length + 1)
                        copy.initialize(from: value, count: length + 1)
                        owned.append(copy)
                        self.values[i] = UnsafePointer(copy)
                    } else {
                        self.values[i] = nil
                    }
                }
                return owned
            }
            self.owned = copied
        }

        deinit {
            for pointer in owned { pointer.deallocate() }
            types.deallocate()
            values.deallocate()
            lengths.deallocate()
            formats.deallocate()
        }
    }
}

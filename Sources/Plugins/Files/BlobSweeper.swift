// SPDX-License-Identifier: Apache-2.0
import Bus
import PluginKit
import Storage

/// Removes bytes no row names, once an hour: a file written but never recorded (a crash
/// between the two), its thumbnails, a write cut off in `.incoming`, and the partial bytes of a
/// resumable upload that is gone. Only what was last changed more than `grace` ago, so an
/// upload being stored right now is never touched. (Objects in an S3 bucket are not swept.)
struct BlobSweeper: Service {
    let database: any Database
    let blobs: FileBlobs
    let logger: Logger
    var interval: Duration = .seconds(3600)
    var grace: Duration = .seconds(3600)
    /// Files looked at in one sweep (the rest wait for the next).
    var batch = 20_000
    var name: String { "files.blobSweeper" }

    func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await sweep(now: WallTime.now().nanosecondsSinceEpoch)
                } catch {
                    logger.warning("the files directory could not be swept; trying again in an hour", metadata: ["error": "\(error)"])
                }
                try await Task.sleep(for: interval)
            }
        }
    }

    /// Removes what no row names and was last changed before `now` less the grace; returns how many.
    @discardableResult
    func sweep(now: Int64) async throws -> Int {
        let cutoff = (now - grace.components.seconds * 1_000_000_000) / 1_000_000_000
        let found = try await blobs.files(changedBefore: cutoff, limit: batch)
        guard !found.isEmpty else { return 0 }
        let files = Set(found.filter { $0.id.hasPrefix("f_") }.map(\.id)), uploads = Set(found.filter { $0.id.hasPrefix("u_") }.map(\.id))
        let (knownFiles, knownUploads) = try await known(files: Array(files), uploads: Array(uploads))
        let orphans = found.filter { entry in
            if entry.id.hasPrefix("u_") { return !knownUploads.contains(entry.id) }
            // A file's bytes left in .incoming were never renamed into place: a cut-off write.
            return entry.incoming || !knownFiles.contains(entry.id)
        }
        try await blobs.remove(paths: orphans.map(\.path))
        if !orphans.isEmpty { logger.notice("bytes no file or upload names were removed from the files directory", metadata: ["files": "\(orphans.count)"]) }
        return orphans.count
    }

    /// Which of the ids have a row.
    private func known(files: [String], uploads: [String]) async throws -> (Set<String>, Set<String>) {
        try await database.read { tx in
            func present(_ ids: [String], in table: String) throws -> Set<String> {
                var out: Set<String> = []
                for start in stride(from: 0, to: ids.count, by: 500) {
                    let chunk = ids[start..<min(start + 500, ids.count)]
                    let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                    for row in try tx.query("SELECT id FROM \(table) WHERE id IN (\(marks))", chunk.map { .text($0) }) {
                        if let id = row.text("id") { out.insert(id) }
                    }
                }
                return out
            }
            return (try present(files, in: "files"), try present(uploads, in: "files_uploads"))
        }
    }
}

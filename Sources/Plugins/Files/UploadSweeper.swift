// SPDX-License-Identifier: Apache-2.0
import Bus
import PluginKit

/// Ends resumable uploads past their expiry (`Upload-Expires`), freeing their bytes and the
/// quota they held, once a minute.
struct UploadSweeper: Service {
    let uploads: UploadsRepository
    let blobs: FileBlobs
    let logger: Logger
    var interval: Duration = .seconds(60)
    var name: String { "files.uploadSweeper" }

    func run() async throws {
        try await cancelOnGracefulShutdown {
            while !Task.isCancelled {
                try await sweep(now: WallTime.now().nanosecondsSinceEpoch)
                try await Task.sleep(for: interval)
            }
        }
    }

    /// Ends what expired by `now`; returns how many.
    @discardableResult
    func sweep(now: Int64) async throws -> Int {
        var ended = 0
        while true {
            let ids = try await uploads.expire(now: now)
            try await blobs.removePartials(ids)
            ended += ids.count
            if ids.count < 500 { break }
        }
        if ended > 0 { logger.info("resumable uploads expired; their bytes are freed", metadata: ["uploads": "\(ended)"]) }
        return ended
    }
}

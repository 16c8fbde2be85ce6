// SPDX-License-Identifier: Apache-2.0

/// Where finished files' bytes are kept: the data directory (`FileBlobs`, the default) or
/// S3-compatible object storage (`S3FileStore`, for several instances).
protocol FileStore: Sendable {
    /// Stores `bytes` as file `id`, durably, before it returns.
    func write(_ bytes: [UInt8], id: String) async throws
    /// File `id`'s bytes; nil when there are none.
    func read(id: String) async throws -> [UInt8]?
    /// Removes the files of `ids` (those already gone are no error).
    func remove(_ ids: [String]) async throws
}

extension FileBlobs: FileStore {}

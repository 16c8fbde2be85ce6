// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Files

/// The `files*` keys as read, and the plugin's options they make.
struct FilesSettings: Sendable {
    var directory: String?
    var maxMB = 10
    var quotaMB = 100
    var uploadsInFlight = 4
    var pendingUploads = 16
    var uploadHours = 24
    var allowedTypes = FilesOptions.knownTypes
    var maxMegapixels = 50
    var keepMetadata = false
    var urlKeyFile: String?

    func options(dataDirectory: String) throws -> FilesOptions {
        var options = FilesOptions(directory: directory ?? dataDirectory + "/plugin-data/files")
        options.maxFileBytes = Int64(maxMB) << 20
        options.quotaBytes = Int64(quotaMB) << 20
        options.uploadsInFlight = uploadsInFlight
        options.pendingUploads = pendingUploads
        options.uploadLifetime = .seconds(Int64(uploadHours) * 3600)
        options.allowedTypes = allowedTypes
        options.maxPixels = maxMegapixels * 1_000_000
        options.keepMetadata = keepMetadata
        if let urlKeyFile {
            let key = try Self.read(urlKeyFile)
            guard key.count >= 32 else { throw ConfigProblem("filesUrlKeyFile: \(urlKeyFile) holds \(key.count) bytes; a key needs at least 32") }
            options.urlKey = key
        }
        return options
    }

    private static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ConfigProblem("filesUrlKeyFile: cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var key = [UInt8](repeating: 0, count: 4096)
        let n = key.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { throw ConfigProblem("filesUrlKeyFile: cannot read \(path): \(String(cString: strerror(errno)))") }
        return Array(key.prefix(n))
    }
}

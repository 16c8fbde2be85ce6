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
    var thumbnailSizes = [256, 1024]
    var thumbnailMaxMegapixels = 40
    var urlKeyFile: String?
    var s3Endpoint: String?
    var s3Bucket: String?
    var s3Region = "us-east-1"
    var s3AccessKeyID: String?
    var s3SecretKeyFile: String?
    var s3PathStyle = true
    var s3Prefix = ""
    var s3PartMB = 8
    var s3CAFile: String?

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
        options.thumbnailSizes = thumbnailSizes
        options.thumbnailMaxSourcePixels = thumbnailMaxMegapixels * 1_000_000
        if let urlKeyFile {
            let key = try Self.read(urlKeyFile, key: "filesUrlKeyFile")
            guard key.count >= 32 else { throw ConfigProblem("filesUrlKeyFile: \(urlKeyFile) holds \(key.count) bytes; a key needs at least 32") }
            options.urlKey = key
        }
        if let s3Endpoint {
            guard let bucket = s3Bucket, let keyID = s3AccessKeyID, let secretFile = s3SecretKeyFile else {
                throw ConfigProblem("filesS3Endpoint needs filesS3Bucket, filesS3AccessKeyId and filesS3SecretKeyFile")
            }
            guard s3PartMB >= 5 else { throw ConfigProblem("filesS3PartMB: S3 takes parts of at least 5 MiB") }
            let secret = String(decoding: try Self.read(secretFile, key: "filesS3SecretKeyFile"), as: UTF8.self).trimmingWhitespace()
            guard !secret.isEmpty else { throw ConfigProblem("filesS3SecretKeyFile: \(secretFile) is empty") }
            var s3 = S3Options(endpoint: s3Endpoint, bucket: bucket, region: s3Region, accessKeyID: keyID, secretAccessKey: secret)
            s3.pathStyle = s3PathStyle
            s3.prefix = s3Prefix
            s3.partBytes = s3PartMB << 20
            s3.caFile = s3CAFile
            options.s3 = s3
        }
        return options
    }

    private static func read(_ path: String, key: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ConfigProblem("\(key): cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var key = [UInt8](repeating: 0, count: 4096)
        let n = key.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { throw ConfigProblem("\(key): cannot read \(path): \(String(cString: strerror(errno)))") }
        return Array(key.prefix(n))
    }
}

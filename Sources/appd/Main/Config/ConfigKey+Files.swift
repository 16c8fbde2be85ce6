// SPDX-License-Identifier: Apache-2.0
import Files

/// The keys of stored files (part of `ConfigKey.all`; docs/files.md).
extension ConfigKey {
    static let files: [ConfigKey] = [
        text("filesDirectory", "--files-directory", "Where stored files' bytes live (default: <dataDirectory>/plugin-data/files, in backups).") {
            $0.files.directory = $1
        },
        integer("filesMaxMB", "--files-max-mb", "Largest file one upload may store, in MiB (default: 10).") { $0.files.maxMB = $1 },
        integer("filesQuotaMB", "--files-quota-mb", "What one account may store in all, in MiB (default: 100).") { $0.files.quotaMB = $1 },
        integer("filesUploadsInFlight", "--files-uploads-in-flight", "Uploads one account may have running at once on one instance (default: 4).") {
            $0.files.uploadsInFlight = $1
        },
        integer("filesPendingUploads", "--files-pending-uploads", "Resumable (tus) uploads one account may have under way (default: 16).") {
            $0.files.pendingUploads = $1
        },
        integer("filesUploadHours", "--files-upload-hours", "Hours a resumable upload may take before it ends and its bytes are freed (default: 24).") {
            $0.files.uploadHours = $1
        },
        list(
            "filesAllowedTypes", "--files-allowed-types",
            "Types accepted, as read from the bytes (default: image/jpeg, image/png, image/gif, image/webp, image/heic, application/pdf).",
            check: { type throws(ConfigProblem) in
                guard FilesOptions.knownTypes.contains(type) else { throw ConfigProblem("knows \(FilesOptions.knownTypes.joined(separator: ", ")); not \(type)") }
            }
        ) { $0.files.allowedTypes = $1 },
        integer("filesMaxMegapixels", "--files-max-megapixels", "Largest image accepted, in millions of pixels; larger ones are refused unread (default: 50).") {
            $0.files.maxMegapixels = $1
        },
        list(
            "filesThumbnailSizes", "--files-thumbnail-sizes", "Sides of the JPEG thumbnails made of each JPEG and PNG, e.g. 256,1024 (default); empty: none.",
            check: { side throws(ConfigProblem) in
                guard let n = Int(side), (16...4096).contains(n) else { throw ConfigProblem("needs sides from 16 to 4096 pixels; not \(side)") }
            }
        ) { $0.files.thumbnailSizes = $1.compactMap { Int($0) } },
        integer("filesThumbnailMaxMegapixels", "--files-thumbnail-max-megapixels", "Images with more millions of pixels get no thumbnails (default: 40).") {
            $0.files.thumbnailMaxMegapixels = $1
        },
        flag("filesKeepMetadata", "--files-keep-metadata", "Keep photos' EXIF (GPS among it), XMP and text as uploaded (default: false, stripped).") {
            $0.files.keepMetadata = $1
        },
        text(
            "filesUrlKeyFile", "--files-url-key-file",
            "A file holding the key of signed download URLs (32+ bytes); set the same on every instance (default: one made in filesDirectory)."
        ) {
            $0.files.urlKeyFile = $1
        },
        text("filesS3Endpoint", "--files-s3-endpoint", "Keep files in S3-compatible storage at this URL, e.g. https://s3.eu-central-1.amazonaws.com (default: off, the directory).")
        {
            $0.files.s3Endpoint = $1
        },
        text("filesS3Bucket", "--files-s3-bucket", "The bucket (with filesS3Endpoint).") { $0.files.s3Bucket = $1 },
        text("filesS3Region", "--files-s3-region", "The region requests are signed for (default: us-east-1).") { $0.files.s3Region = $1 },
        text("filesS3AccessKeyId", "--files-s3-access-key-id", "The access key id (with filesS3SecretKeyFile).") { $0.files.s3AccessKeyID = $1 },
        text("filesS3SecretKeyFile", "--files-s3-secret-key-file", "A file holding the secret access key.") { $0.files.s3SecretKeyFile = $1 },
        flag("filesS3PathStyle", "--files-s3-path-style", "endpoint/bucket/key (true, the default) or bucket.endpoint/key (false, AWS's virtual-host style).") {
            $0.files.s3PathStyle = $1
        },
        text("filesS3Prefix", "--files-s3-prefix", "Put before every object's key, e.g. appd/ (default: none).") { $0.files.s3Prefix = $1 },
        integer("filesS3PartMB", "--files-s3-part-mb", "Files larger than this go up as a multipart upload in parts of this size, in MiB (default: 8, at least 5).") {
            $0.files.s3PartMB = $1
        },
        text("filesS3CaFile", "--files-s3-ca-file", "Trusted CA certificates (PEM) for a private endpoint (default: the system's).") { $0.files.s3CAFile = $1 },
    ]
}

// SPDX-License-Identifier: Apache-2.0

/// What the operator sets for stored files (config keys `files*`, docs/files.md).
public struct FilesOptions: Sendable {
    /// Where the bytes live: `<data directory>/plugin-data/files` by default (in backups).
    public var directory: String
    /// One upload's bound (the HTTP server takes bodies this large on `/files` only).
    public var maxFileBytes: Int64 = 10 * 1024 * 1024
    /// What one account may store in all.
    public var quotaBytes: Int64 = 100 * 1024 * 1024
    /// Uploads one account may have in flight on this instance.
    public var uploadsInFlight = 4
    /// Resumable uploads (tus) one account may have started and not finished.
    public var pendingUploads = 16
    /// How long a resumable upload may take from its creation; then it and its bytes go.
    public var uploadLifetime: Duration = .seconds(24 * 3600)
    /// The types accepted, as sniffed from the bytes (a subset of `ContentSniffer.known`).
    public var allowedTypes: [String] = ContentSniffer.known
    /// An image's width × height bound: a larger one is refused from its header, never decoded.
    public var maxPixels = 50_000_000
    /// The thumbnails made of each JPEG and PNG: JPEGs fitting squares of these sides, each
    /// only when the image is larger.
    public var thumbnailSizes = [256, 1024]
    /// An image with more pixels gets no thumbnail (its own bytes serve).
    public var thumbnailMaxSourcePixels = 40_000_000
    /// Keep JPEG and PNG metadata (EXIF with GPS, XMP, text) as uploaded; off by default.
    public var keepMetadata = false
    /// The HMAC key of signed download URLs (at least 32 bytes). Nil: a key made once and kept
    /// in `directory` (one instance; several instances must share one, set here).
    public var urlKey: [UInt8]?
    /// S3-compatible object storage for finished files instead of `directory` (several
    /// instances need it: each sees the others' files). Resumable uploads in progress stay in
    /// `directory`.
    public var s3: S3Options?

    public init(directory: String) { self.directory = directory }

    /// The types appd can recognise from the bytes.
    public static var knownTypes: [String] { ContentSniffer.known }
}

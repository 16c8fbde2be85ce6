// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Files`.
public enum FilesError: InterfaceError {
    public static let interface = "io.appd.Files"

    case validationFailed(field: String, reason: String)
    case notFound
    /// The account stores as many bytes as it may.
    case quotaExceeded(quotaBytes: Int64)
    /// The file is larger than one upload may be.
    case tooLarge(limitBytes: Int64)
    /// The bytes are not of an allowed type, or not of the type declared.
    case typeRefused(declared: String, detected: String?, reason: String)
    /// The file goes with an item (`StoredFile.usedBy`).
    case inUse(usedBy: String)
    /// The piece does not start where the upload is (or another is being written): go on from `offset`.
    case offsetMismatch(offset: Int64)

    public static func validation(_ field: String, _ reason: String) -> FilesError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        case .notFound: "no such file"
        case .quotaExceeded(let quota): "this account stores \(quota) bytes, as many as it may; delete files first"
        case .tooLarge(let limit): "a file may be at most \(limit) bytes"
        case .typeRefused(_, _, let reason): reason
        case .inUse(let item): "the file goes with \(item); change or delete that instead"
        case .offsetMismatch(let offset): "the upload is at byte \(offset); go on from there"
        }
    }
}

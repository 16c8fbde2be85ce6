// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The typed errors of `io.appd.Rating`.
public enum RatingError: InterfaceError {
    public static let interface = "io.appd.Rating"

    case validationFailed(field: String, reason: String)

    public static func validation(_ field: String, _ reason: String) -> RatingError { .validationFailed(field: field, reason: reason) }

    public var description: String {
        switch self {
        case .validationFailed(let field, let reason): "\(field): \(reason)"
        }
    }
}

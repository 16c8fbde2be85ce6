// SPDX-License-Identifier: Apache-2.0
/// What kind of failure an error is, declared with the error in its interface: a line
/// `category: notFound` in the error's doc comment. The HTTP API answers an error with the
/// status of its category (`ErrorCategory.httpStatus`), so no transport keeps a table of error
/// names, and an external plugin's errors get theirs from its own IDL.
public enum ErrorCategory: String, Sendable, CaseIterable, Codable {
    /// The call itself is wrong (bad parameters, a malformed token): fix it, do not retry.
    case invalid
    /// No session, or not a valid one: sign in.
    case unauthenticated
    /// An entitlement is missing: buy, or restore purchases.
    case paymentRequired
    /// Signed in, but not allowed (standing, role, ownership, quota): retrying will not help.
    case forbidden
    /// What the call names does not exist.
    case notFound
    /// The current state refuses the change (already exists, changed meanwhile, in use).
    case conflict
    /// What the client holds is gone for good (resync from scratch).
    case gone
    /// Well-formed, but cannot be processed as sent (an idempotency key reused with other parameters).
    case unprocessable
    /// Too many calls or attempts: retry after the time the error gives.
    case tooManyRequests
    /// appd or something it needs is down or busy for now: retry later.
    case unavailable
    /// The call ran out of time.
    case timedOut
    /// The method exists but does nothing here.
    case notImplemented
    /// appd's own failure.
    case `internal`

    /// The HTTP status an error of this category is answered with.
    public var httpStatus: Int {
        switch self {
        case .invalid: 400
        case .unauthenticated: 401
        case .paymentRequired: 402
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .gone: 410
        case .unprocessable: 422
        case .tooManyRequests: 429
        case .unavailable: 503
        case .timedOut: 504
        case .notImplemented: 501
        case .internal: 500
        }
    }

    /// The category a doc comment declares (its line `category: <name>`); nil when none does.
    /// Throws the line's text when it names no category.
    static func declared(in doc: String) throws(UnknownCategory) -> ErrorCategory? {
        for line in doc.split(separator: "\n") where line.hasPrefix("category:") {
            let name = line.dropFirst("category:".count).trimmingWhitespace()
            guard let category = ErrorCategory(rawValue: name) else { throw UnknownCategory(text: name) }
            return category
        }
        return nil
    }

    struct UnknownCategory: Error {
        let text: String
    }
}

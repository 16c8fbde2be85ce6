import Bus
import HTTP

/// The HTTP status for a varlink error (by its short name): the client's mistake 4xx, appd's
/// or its database's trouble 5xx. The body keeps the error's full name and parameters.
public enum APIErrorStatus {
    public static func status(for error: String) -> Int {
        let name = error.split(separator: ".").last.map(String.init) ?? error
        return switch name {
        case "InvalidParameter", "ValidationFailed", "InvalidTopic", "InvalidEventPayload", "MalformedEvent", "InvalidResetToken", "InvalidVerificationToken", "ExpectedMore":
            400
        case "Unauthenticated", "SessionExpired", "InvalidCredentials", "InvalidIdToken": 401
        case "PaymentRequired": 402
        case "PermissionDenied", "OnboardingRequired", "AccountDisabled", "TopicOwned", "QuotaExceeded", "ReauthenticationRequired", "EmailNotVerified", "GuestsDisabled", "MemoryFull": 403
        case "NotFound", "MethodNotFound", "InterfaceNotFound", "UnknownAccount", "UnknownEntitlement", "UnknownProvider", "IdentityNotLinked": 404
        case "AccountExistsForEmail", "IdentityInUse", "ProviderAlreadyLinked", "LastSignInMethod", "NotAGuest", "Conflict",
            "IdempotencyKeyInUse", "IdempotencyOutcomeUnknown":
            409
        case "ResyncRequired": 410
        case "IdempotencyKeyReused": 422
        case "TooManyAttempts", "TooManyStreams", "RateLimited": 429
        case "MethodNotImplemented": 501
        case "StorageFailed", "Busy", "RequirementUnavailable", "PluginUnavailable", "PluginDisabled", "SubscriptionOverflow", "IdentityProviderUnavailable",
            "ProviderUnavailable":
            503
        case "DeadlineExceeded": 504
        case "InternalError": 500
        default: 400
        }
    }

    /// The response for an error reply: `{"error": name, "parameters": {...}}`, with
    /// `Retry-After` where the error says when to retry.
    public static func response(error: String, parameters: JSONValue) -> HTTPResponse {
        let status = status(for: error)
        var headers: [(name: String, value: String)] = []
        if status == 429 || status == 503 || error.hasSuffix(".IdempotencyKeyInUse") {
            var seconds: Int64 = 1
            if case .int(let given)? = parameters["retryAfterSeconds"] { seconds = given }
            headers.append(("Retry-After", "\(max(1, seconds))"))
        }
        if status == 401 { headers.append(("WWW-Authenticate", "Bearer")) }
        return HTTPResponse(status: status, body: ["error": .string(error), "parameters": parameters], headers: headers)
    }

    static func refusal(_ status: Int, _ error: String, _ parameters: JSONValue = [:]) -> HTTPResponse {
        HTTPResponse(status: status, body: ["error": .string(error), "parameters": parameters])
    }
}

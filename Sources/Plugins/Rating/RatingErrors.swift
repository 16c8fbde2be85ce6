import Bus

/// The typed errors of `io.appd.Rating`.
public struct RatingError: WireError, Equatable {
    public var field: String
    public var reason: String
    public var wireName: String { "io.appd.Rating.ValidationFailed" }
    public var wireParameters: [String: JSONValue] { ["field": .string(field), "reason": .string(reason)] }
    public var description: String { "\(field): \(reason)" }
}

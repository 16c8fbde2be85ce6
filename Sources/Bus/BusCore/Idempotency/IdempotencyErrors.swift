// SPDX-License-Identifier: Apache-2.0
/// An idempotency key that cannot be used (empty, too long, control characters).
public struct InvalidIdempotencyKey: WireError, Equatable {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var wireName: String { "io.appd.Bus.InvalidIdempotencyKey" }
    public var wireParameters: [String: JSONValue] { ["reason": .string(reason)] }
    public var description: String { "the idempotency key \(reason)" }
}

/// A key was sent with a method that does not keep outcomes by key (it changes nothing, or
/// its plugin does not declare `idempotent`). Refused rather than ignored: a retry of such a
/// call would not be safe.
public struct IdempotencyNotSupported: WireError, Equatable {
    public let method: String
    public init(method: String) { self.method = method }
    public var wireName: String { "io.appd.Bus.IdempotencyNotSupported" }
    public var wireParameters: [String: JSONValue] { ["method": .string(method)] }
    public var description: String { "\(method) does not take an idempotency key; send it without one" }
}

/// The key was used before for this method with other parameters (HTTP 422): a new write needs
/// a new key.
public struct IdempotencyKeyReused: WireError, Equatable {
    public let method: String
    public init(method: String) { self.method = method }
    public var wireName: String { "io.appd.Bus.IdempotencyKeyReused" }
    public var wireParameters: [String: JSONValue] { ["method": .string(method)] }
    public var description: String {
        "this idempotency key was already used for \(method) with other parameters; use a new key for a new write"
    }
}

/// The first call with this key is still running (HTTP 409): retry after a moment to get its
/// outcome.
public struct IdempotencyKeyInUse: WireError, Equatable {
    public let method: String
    public let retryAfterSeconds: Int
    public init(method: String, retryAfterSeconds: Int = 1) {
        self.method = method
        self.retryAfterSeconds = retryAfterSeconds
    }
    public var wireName: String { "io.appd.Bus.IdempotencyKeyInUse" }
    public var wireParameters: [String: JSONValue] { ["method": .string(method), "retryAfterSeconds": .int(Int64(retryAfterSeconds))] }
    public var description: String { "a call to \(method) with this idempotency key is still running; retry in \(retryAfterSeconds) s for its outcome" }
}

/// The first call with this key took effect, but its reply was not kept (appd stopped between
/// the commit and storing the reply, for a command that does not stage its reply in its
/// write). Nothing is applied twice; read the current state instead of retrying.
public struct IdempotencyOutcomeUnknown: WireError, Equatable {
    public let method: String
    public init(method: String) { self.method = method }
    public var wireName: String { "io.appd.Bus.IdempotencyOutcomeUnknown" }
    public var wireParameters: [String: JSONValue] { ["method": .string(method)] }
    public var description: String {
        "the first call to \(method) with this key took effect but its reply was lost; read the current state instead of retrying"
    }
}

/// The outcome a keyed call had the first time: an error of the method's own interface, given
/// again as it was.
public struct StoredWireError: WireError, Equatable {
    public let wireName: String
    public let parameters: [String: JSONValue]
    public init(name: String, parameters: [String: JSONValue]) {
        self.wireName = name
        self.parameters = parameters
    }
    public var wireParameters: [String: JSONValue] { parameters }
    public var description: String { "\(wireName) (the stored outcome of the first call with this idempotency key)" }
}

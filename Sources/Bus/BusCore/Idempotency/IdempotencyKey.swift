// SPDX-License-Identifier: Apache-2.0
/// A client's name for one logical write, so that sending it again (after a lost reply, a
/// timeout, a crash) has the effect once and returns the first outcome (`Idempotency-Key` over
/// HTTP, `idempotencyKey` in a varlink call). Stripe's keys and the IETF idempotency-key draft
/// are the model: a UUID per write, chosen by the client, kept for a configured time.
public struct IdempotencyKey: Sendable, Hashable, CustomStringConvertible {
    public static let maxLength = 255
    public let value: String

    /// 1 to 255 visible ASCII characters (a UUID is the usual choice).
    public init(_ value: String) throws(InvalidIdempotencyKey) {
        guard !value.isEmpty else { throw InvalidIdempotencyKey(reason: "is empty; send a fresh UUID for each write") }
        guard value.utf8.count <= Self.maxLength else { throw InvalidIdempotencyKey(reason: "is longer than \(Self.maxLength) characters") }
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw InvalidIdempotencyKey(reason: "must be visible ASCII characters only (a UUID is the usual choice)")
        }
        self.value = value
    }

    public var description: String { value }
}

/// A keyed call as the bus carries it to the idempotency gate: the key, and the parameters the
/// call was made with (a retry must repeat them exactly).
public struct IdempotentRequest: Sendable {
    public let key: IdempotencyKey
    public let parameters: JSONValue

    public init(key: IdempotencyKey, parameters: JSONValue) {
        self.key = key
        self.parameters = parameters
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Crypto
import Storage
import Synchronization

/// Keyed calls have their effect once (gate "idempotency", GatePosition.idempotency): a call sent with an
/// idempotency key to a method that declares `idempotent` gets the stored outcome of the first
/// call with that key, or runs and has its outcome kept.
///
/// Keys belong to a caller (`user:ID`, `plugin:NAME`, `uid:N`) and a method. The parameters'
/// fingerprint must match (else `IdempotencyKeyReused`). While the first call runs, a second gets
/// `IdempotencyKeyInUse`; on several instances, the second attempt's write collides with the
/// first's row in the database and is undone (`IdempotencyLog.keep`). Stored are the reply and
/// the errors of the method's own interface (`io.appd.Todos.NotFound` for a Todos method); a
/// gate's refusal or a transient failure is not stored, so the retry runs again.
///
/// It sits after the session gate (the key's owner is the signed-in user) and before the
/// paywall (a retry answered from the store consumes no meter).
public struct IdempotencyGate: Gate {
    public var name: String { "idempotency" }
    public var position: GatePosition { .idempotency }
    let log: IdempotencyLog
    /// How long a row without an outcome counts as still running (the longest a call can take);
    /// after that, its reply is taken to be lost.
    let runningGrace: Duration
    private let inFlight = InFlightKeys()

    public init(database: any Database, runningGrace: Duration = .seconds(120)) {
        self.log = IdempotencyLog(database: database)
        self.runningGrace = runningGrace
    }

    public func covers(_ requirement: Requirement) -> Bool { requirement == .idempotent }

    public func applies(to envelope: Envelope) -> Bool { envelope.idempotency != nil }
    /// A call carries a key only to a method that declares `idempotent` (the bus refuses any
    /// other with `IdempotencyNotSupported` before the gates).
    public func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool { requirements.contains(.idempotent) }

    public func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        guard let request = envelope.idempotency else { return try await next(envelope) }
        let method = envelope.name
        let record = IdempotencyRecord(
            scope: try Self.scope(envelope.caller), method: method, key: request.key.value,
            fingerprint: Self.fingerprint(method: method, parameters: request.parameters))
        // The slot first, then the store: a call that finished here stored its outcome before
        // it left the slot, so the read below sees it.
        let slot = record.scope + "\u{0}" + method + "\u{0}" + record.key
        guard inFlight.insert(slot) else { throw IdempotencyKeyInUse(method: method) }
        defer { inFlight.remove(slot) }
        if let stored = try await log.entry(scope: record.scope, method: method, key: record.key) {
            return try answer(stored, record)
        }
        let reply: Reply
        do {
            // The record goes to the handler (gates inside this one, a meter's, write without it).
            var inner = envelope
            inner.idempotencyRecord = record
            reply = try await next(inner)
        } catch is IdempotencyLog.Collision {
            // Another attempt (another instance) committed first: its outcome is the answer.
            guard let stored = try await log.entry(scope: record.scope, method: method, key: record.key) else {
                throw IdempotencyKeyInUse(method: method)
            }
            return try answer(stored, record)
        } catch let error as any WireError {
            guard let interface = method.methodNameParts?.interface, error.wireName.hasPrefix(interface + ".") else { throw error }
            let (name, parameters) = error.wire
            _ = try await log.store(record, outcome: .error(name: name, parameters: parameters))
            throw error
        }
        if record.outcome.withReply { return reply }
        // Nothing written, or written without the reply staged: keep the reply now. Another
        // instance's attempt may have stored first: its outcome is then the one every retry gets.
        switch try await log.store(record, outcome: .reply(try Self.encode(reply))) {
        case .reply(let stored)?: return try Self.decode(stored, as: Reply.self)
        case .error(let name, let parameters)?: throw StoredWireError(name: name, parameters: parameters)
        case nil: return reply
        }
    }

    /// The stored outcome as this call's answer.
    private func answer<Reply: Sendable>(_ stored: IdempotencyLog.Entry, _ record: IdempotencyRecord) throws -> Reply {
        guard stored.fingerprint == record.fingerprint else { throw IdempotencyKeyReused(method: record.method) }
        switch stored.outcome {
        case .reply(let value)?:
            return try Self.decode(value, as: Reply.self)
        case .error(let name, let parameters)?:
            throw StoredWireError(name: name, parameters: parameters)
        case nil:
            // Committed, reply not yet kept: the first call is finishing, or its reply was lost.
            if WallTime.now().nanosecondsSinceEpoch - stored.createdAt.nanosecondsSinceEpoch < Int64(runningGrace.components.seconds) * 1_000_000_000 {
                throw IdempotencyKeyInUse(method: record.method)
            }
            throw IdempotencyOutcomeUnknown(method: record.method)
        }
    }

    /// The service that prunes kept outcomes older than `keep` (24 h by default) every ten
    /// minutes; a retry after that is a new call.
    public static func retention(_ database: any Database, keep: Duration, logger: Logger) -> PeriodicPruning {
        let log = IdempotencyLog(database: database)
        return PeriodicPruning(name: "idempotency-keys", interval: .seconds(600), logger: logger) { try await log.prune(olderThan: keep) }
    }

    /// Whose key it is. A network caller that is not signed in has no key of its own.
    static func scope(_ caller: Caller) throws -> String {
        if let user = caller.principal?.userID { return IdempotencyLog.userScope(user) }
        if let plugin = caller.plugin { return "plugin:" + plugin }
        if let peer = caller.peer { return "uid:\(peer.uid)" }
        guard caller.remoteAddress == nil else {
            throw InvalidIdempotencyKey(reason: "needs a signed-in caller to belong to; sign in first")
        }
        return "daemon"
    }

    /// SHA-256 of the method and the parameters as canonical JSON (sorted keys), hex.
    public static func fingerprint(method: String, parameters: JSONValue) -> String {
        let canonical = parameters == .null ? JSONValue.object([:]) : parameters
        let digest = Digest.sha256(Array(method.utf8) + [0] + JSONWriter.bytes(canonical))
        return digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    static func encode<Reply>(_ reply: Reply) throws -> JSONValue {
        if let value = reply as? JSONValue { return value }
        guard let encodable = reply as? any Encodable else { throw StoredReplyMismatch(reason: "the reply cannot be encoded") }
        return try JSONValue(encoding: encodable)
    }

    static func decode<Reply>(_ value: JSONValue, as type: Reply.Type) throws -> Reply {
        if let same = value as? Reply { return same }
        func open<D: Decodable>(_ decodable: D.Type) throws -> Any { try value.decode(as: decodable) }
        guard let decodable = type as? any Decodable.Type, let decoded = try open(decodable) as? Reply else {
            throw StoredReplyMismatch(reason: "the stored reply does not decode as the method's reply")
        }
        return decoded
    }
}

/// A reply that cannot be kept or given back: a bug (the dispatcher logs it as an internal error).
struct StoredReplyMismatch: Error, CustomStringConvertible {
    let reason: String
    var description: String { "idempotency: \(reason)" }
}

/// The keys this instance is running now.
private final class InFlightKeys: Sendable {
    private let keys = Mutex(Set<String>())
    func insert(_ key: String) -> Bool { keys.withLock { $0.insert(key).inserted } }
    func remove(_ key: String) { _ = keys.withLock { $0.remove(key) } }
}

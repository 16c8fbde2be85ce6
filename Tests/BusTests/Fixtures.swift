// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

// Commands and events shared by the bus tests.

struct Echo: Command {
    static let method = "io.appd.Test.Echo"
    typealias Reply = EchoReply
    var text: String
}

struct EchoReply: Codable, Sendable, Equatable {
    var text: String
    var user: String?
}

struct NeedsSession: Command {
    static let method = "io.appd.Test.NeedsSession"
    static let requirements: [Requirement] = [.session]
    typealias Reply = Empty
}

struct Sleepy: Command {
    static let method = "io.appd.Test.Sleepy"
    typealias Reply = Empty
    var seconds: Double
}

struct Count: StreamingCommand {
    static let method = "io.appd.Test.Count"
    typealias Reply = Int
    var upTo: Int
}

struct TodoCompleted: Event, Equatable {
    static let topic = "todos.completed"
    static let audience = EventAudience.admin
    var id: Int
    var publisher: Int = 0
}

struct TodoCreated: Event, Equatable {
    static let topic = "todos.created"
    static let audience = EventAudience.admin
    var id: Int
}

struct UserSignedUp: Event, Equatable {
    static let topic = "auth.userSignedUp"
    static let audience = EventAudience.admin
    var email: String
}

/// Records the order gates run in, and lets one gate refuse.
final class GateLog: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
    func clear() { entries.withLock { $0.removeAll() } }
}

struct RecordingGate: Gate {
    let name: String
    let log: GateLog
    var refuse: (any Error)? = nil
    var covered: Set<Requirement> = []

    func covers(_ requirement: Requirement) -> Bool { covered.contains(requirement) }

    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        log.append("\(name).in")
        if let refuse { throw refuse }
        let reply = try await next(envelope)
        log.append("\(name).out")
        return reply
    }
}

/// A gate that decides from memory, as the session gate does from its cache: token "good"
/// becomes user "d1" without `handle`; token "bad" is refused there (with `refusal`); any other
/// token is left to `handle` (which records that it ran). A call without a token passes by.
struct DecidingGate: Gate {
    let log: GateLog
    var refusal: any Error = Denied(reason: "bad token")
    var position: GatePosition = .feature
    var name: String { "deciding" }
    var deciding: Deciding { .sometimes }
    func covers(_ requirement: Requirement) -> Bool { requirement == .session }
    func applies(to envelope: Envelope) -> Bool { envelope.caller.sessionToken != nil }
    func decide(_ envelope: inout Envelope) -> GateDecision {
        log.append("deciding.decide")
        switch envelope.caller.sessionToken?.value {
        case "good":
            envelope.caller.principal = Principal(userID: "d1")
            return .pass
        case "bad": return .deny(refusal)
        default: return .handle
        }
    }
    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        log.append("deciding.handle")
        var envelope = envelope
        envelope.caller.principal = Principal(userID: "h1")
        return try await next(envelope)
    }
}

/// A toy session gate: a caller with token "good" becomes user "u1".
struct TokenGate: Gate {
    var name: String { "session" }
    func covers(_ requirement: Requirement) -> Bool { requirement == .session }
    func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        var envelope = envelope
        if envelope.caller.sessionToken?.value == "good" {
            envelope.caller.principal = Principal(userID: "u1")
        }
        if envelope.requirements.contains(.session) && envelope.caller.principal == nil {
            throw Denied(reason: "unauthenticated")
        }
        return try await next(envelope)
    }
}

struct Denied: Error, Equatable {
    let reason: String
}

/// A flag set from another task, read after the fact.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

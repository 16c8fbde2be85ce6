// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Testing

/// The commands that read their own parameters (`JSONObjectReadable`) read exactly what their
/// `Decodable` conformance reads: the same value from every object, and the same error (kind,
/// path, message) from every wrong one — each member missing, null or of each wrong kind, two
/// members wrong at once (which is reported first), unknown members, and not an object at all.
@Suite struct JSONObjectReadableTests {
    /// What one decoding gave: the value's JSON, or the error as a user would see it.
    static func outcome(_ decode: () throws -> some Encodable) -> String {
        do {
            return "value " + (try JSONValue(encoding: decode())).jsonText
        } catch let error as DecodingError {
            switch error {
            case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) at \(path(context)): \(context.debugDescription)"
            case .typeMismatch(let type, let context): return "typeMismatch \(type) at \(path(context)): \(context.debugDescription)"
            case .valueNotFound(let type, let context): return "valueNotFound \(type) at \(path(context)): \(context.debugDescription)"
            case .dataCorrupted(let context): return "dataCorrupted at \(path(context)): \(context.debugDescription)"
            @unknown default: return "\(error)"
            }
        } catch {
            return "\(error)"
        }
    }

    static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }

    /// The stored members of a value (every one set in the samples below).
    static func members(of value: Any) -> [String] { Mirror(reflecting: value).children.compactMap(\.label) }

    static func absentMembers(of value: Any) -> [String] {
        Mirror(reflecting: value).children.compactMap { child in
            let inner = Mirror(reflecting: child.value)
            return inner.displayStyle == .optional && inner.children.isEmpty ? child.label ?? "?" : nil
        }
    }

    static let wrongValues: [JSONValue] = [
        .null, "", "text", 0, -7, .int(Int64.max), .int(Int64.min), 2.0, 2.5, -0.0, 1e300, true, false, [], ["x"], [:], ["a": 1],
    ]

    /// Every object to try for a command whose sample sets every member.
    static func objects(around sample: some Encodable & Sendable, members: [String]) throws -> [JSONValue] {
        guard case .object(let full) = try JSONValue(encoding: sample) else { throw ReadableTestFailure.notAnObject }
        var objects: [JSONValue] = [.object(full), [:], ["unknown": 1], .null, ["x"], "text", 3]
        var withExtra = full
        withExtra["unknown"] = "ignored?"
        objects.append(.object(withExtra))
        for member in members {
            var without = full
            without[member] = nil
            objects.append(.object(without))
            objects.append(.object([member: full[member] ?? .null]))
            for wrong in wrongValues {
                var changed = full
                changed[member] = wrong
                objects.append(.object(changed))
            }
        }
        // Two members wrong at once: which one is reported is part of the error.
        for first in members {
            for second in members where second != first {
                for (a, b) in [(JSONValue.int(1), JSONValue.null), (.null, .bool(true)), ("s", 2.5)] {
                    var changed = full
                    changed[first] = a
                    changed[second] = b
                    objects.append(.object(changed))
                    var missing = full
                    missing[first] = nil
                    missing[second] = b
                    objects.append(.object(missing))
                }
            }
        }
        return objects
    }

    /// Holds `C`'s reader to its `Decodable` conformance over every object around `sample`;
    /// returns how many objects were tried.
    @discardableResult
    static func expectReadsAsDecodable<C: JSONObjectReadable & Encodable & Sendable>(
        _ sample: C, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Int {
        #expect(absentMembers(of: sample) == [], "the sample sets every member", sourceLocation: sourceLocation)
        let read = JSONValue.decoder(for: C.self)
        let objects = try objects(around: sample, members: members(of: sample))
        for object in objects {
            let reader = outcome { try read(object) }
            let decodable = outcome { try object.decode(as: C.self) }
            #expect(reader == decodable, "\(C.self) from \(object.jsonText)", sourceLocation: sourceLocation)
        }
        // The full sample comes back as itself.
        #expect(outcome { try read(try JSONValue(encoding: sample)) } == "value " + (try JSONValue(encoding: sample)).jsonText, sourceLocation: sourceLocation)
        return objects.count
    }

    @Test func todosCommandsReadWhatTheirDecodableConformanceReads() throws {
        var tried = 0
        tried += try Self.expectReadsAsDecodable(TodosInterface.Add(title: "t", notes: "n", dueAt: "2026-12-05T09:00:00Z", id: "t_1"))
        tried += try Self.expectReadsAsDecodable(TodosInterface.Get(id: "t_1"))
        tried += try Self.expectReadsAsDecodable(TodosInterface.List(filter: "open", cursor: "c", limit: 20))
        tried += try Self.expectReadsAsDecodable(
            TodosInterface.Update(id: "t_1", title: "t", notes: "n", dueAt: "2026-12-05T09:00:00Z", expectedVersion: 3))
        tried += try Self.expectReadsAsDecodable(TodosInterface.Complete(id: "t_1", expectedVersion: 3))
        tried += try Self.expectReadsAsDecodable(TodosInterface.Reopen(id: "t_1", expectedVersion: 3))
        tried += try Self.expectReadsAsDecodable(TodosInterface.Delete(id: "t_1", expectedVersion: 3))
        tried += try Self.expectReadsAsDecodable(TodosInterface.Changes(cursor: 12, limit: 100))
        #expect(tried > 500)
    }

    @Test func authAndDaemonCommandsReadWhatTheirDecodableConformanceReads() throws {
        try Self.expectReadsAsDecodable(AuthInterface.WhoAmI())
        try Self.expectReadsAsDecodable(AuthInterface.CheckSignUp(email: "a@example.com", password: "pw"))
        try Self.expectReadsAsDecodable(AuthInterface.SignUp(email: "a@example.com", password: "pw", displayName: "Ann"))
        try Self.expectReadsAsDecodable(AuthInterface.SignIn(email: "a@example.com", password: "pw"))
        try Self.expectReadsAsDecodable(AuthInterface.Refresh(refreshToken: "r"))
        try Self.expectReadsAsDecodable(DaemonInterface.Ping())
    }

    /// The check fails a reader that skips a member or reads members in another order.
    @Test func theCheckCatchesAReaderThatDiffers() throws {
        let sample = Misread(first: "a", second: 1)
        let read = JSONValue.decoder(for: Misread.self)
        let objects = try Self.objects(around: sample, members: Self.members(of: sample))
        let differing = objects.filter { object in
            Self.outcome { try read(object) } != Self.outcome { try object.decode(as: Misread.self) }
        }
        #expect(differing.count > 10)
    }
}

/// A reader that reads its members in the wrong order and one of them wrongly.
private struct Misread: JSONObjectReadable, Encodable, Sendable {
    var first: String
    var second: Int?
    init(first: String, second: Int?) {
        self.first = first
        self.second = second
    }
    init(reading object: JSONObjectReader) throws {
        let second: Int64? = try object.optional("second")
        self.init(first: try object.required("first"), second: second.map { Int($0) == 1 ? 2 : Int($0) })
    }
}

enum ReadableTestFailure: Error { case notAnObject }

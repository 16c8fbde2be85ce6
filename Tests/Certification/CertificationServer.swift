// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// The certification service, written as a plugin author writes a varlink service with the Bus
/// library: typed commands on a bus, a dispatcher that validates every call against the IDL,
/// and `VarlinkServer` on the socket. Each client walks Start, Test01 … Test11, End; each step
/// checks what it was given and says what it wanted when it differs.
final class CertificationService: Sendable {
    /// Each client's next expected method.
    private let next = Mutex<[String: String]>([:])

    /// Moves `client` from `method` to `following`; a step out of order ends the client.
    func step(_ client: String, _ method: String, then following: String) throws {
        try next.withLock { (table: inout [String: String]) throws in
            guard let expected = table[client] else { throw Certification.ClientIdError() }
            guard expected == method else {
                table[client] = nil
                throw Certification.CertificationError(
                    wants: .string("a call of org.varlink.certification.\(expected)"), got: .string("a call of org.varlink.certification.\(method)"))
            }
            table[client] = following
        }
    }

    /// Fails the client unless `got` equals `wants`.
    func expect<T: Codable & Equatable>(_ client: String, _ got: T, _ wants: T) throws {
        guard got == wants else {
            next.withLock { _ = $0.removeValue(forKey: client) }
            throw Certification.CertificationError(wants: try JSONValue(encoding: wants), got: try JSONValue(encoding: got))
        }
    }

    func register(on bus: EventBus) throws {
        typealias C = Certification
        try bus.register(C.Start.self) { _, _ in
            let id = (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 16) }.joined()
            self.next.withLock { $0[id] = "Test01" }
            return .init(client_id: id)
        }
        try bus.register(C.Test01.self) { c, _ in
            try self.step(c.client_id, "Test01", then: "Test02")
            return .init(bool: true)
        }
        try bus.register(C.Test02.self) { c, _ in
            try self.step(c.client_id, "Test02", then: "Test03")
            try self.expect(c.client_id, c.bool, true)
            return .init(int: 1)
        }
        try bus.register(C.Test03.self) { c, _ in
            try self.step(c.client_id, "Test03", then: "Test04")
            try self.expect(c.client_id, c.int, 1)
            return .init(float: 1.0)
        }
        try bus.register(C.Test04.self) { c, _ in
            try self.step(c.client_id, "Test04", then: "Test05")
            try self.expect(c.client_id, c.float, 1.0)
            return .init(string: "ping")
        }
        try bus.register(C.Test05.self) { c, _ in
            try self.step(c.client_id, "Test05", then: "Test06")
            try self.expect(c.client_id, c.string, "ping")
            return C.four
        }
        try bus.register(C.Test06.self) { c, _ in
            try self.step(c.client_id, "Test06", then: "Test07")
            try self.expect(c.client_id, C.Four(bool: c.bool, int: c.int, float: c.float, string: c.string), C.four)
            return .init(struct: C.four)
        }
        try bus.register(C.Test07.self) { c, _ in
            try self.step(c.client_id, "Test07", then: "Test08")
            try self.expect(c.client_id, c.struct, C.four)
            return .init(map: C.map)
        }
        try bus.register(C.Test08.self) { c, _ in
            try self.step(c.client_id, "Test08", then: "Test09")
            try self.expect(c.client_id, c.map, C.map)
            return .init(set: C.set)
        }
        try bus.register(C.Test09.self) { c, _ in
            try self.step(c.client_id, "Test09", then: "Test10")
            try self.expect(c.client_id, c.set, C.set)
            return .init(mytype: C.mytype)
        }
        try bus.register(C.Test10.self) { c, _, writer in
            try self.step(c.client_id, "Test10", then: "Test11")
            try self.expect(c.client_id, c.mytype, C.mytype)
            for reply in C.replies.dropLast() { try await writer.send(.init(string: reply)) }
            return .init(string: C.replies[C.replies.count - 1])
        }
        try bus.register(C.Test11.self) { c, _ in
            try self.step(c.client_id, "Test11", then: "End")
            try self.expect(c.client_id, c.last_more_replies, C.replies)
            return Empty()
        }
        try bus.register(C.End.self) { c, _ in
            try self.step(c.client_id, "End", then: "Start")
            self.next.withLock { _ = $0.removeValue(forKey: c.client_id) }
            return .init(all_ok: true)
        }
    }

    /// Serves the interface on a Unix socket at `path` until the process is stopped.
    static func serve(path: String) async throws {
        let logger = Logger(label: "certification")
        let bus = EventBus()
        let dispatcher = try VarlinkDispatcher(
            bus: bus, info: .init(vendor: "appd", product: "appd varlink certification", version: Version.current, url: "https://github.com/appd/appd"))
        try dispatcher.register(try VarlinkInterface(parsing: Certification.idl, grammar: .complete))
        try CertificationService().register(on: bus)
        let server = try VarlinkServer(listener: try .bind(path: path, mode: 0o600, group: nil), dispatcher: dispatcher, limits: ServerLimits(), logger: logger)
        print("serving org.varlink.certification on unix:\(path)")
        try await ServiceGroup(services: [server], logger: logger).run()
    }
}

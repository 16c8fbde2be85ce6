// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Security review 2, finding 1, over HTTP as the attacker used it: text sizes counted in
/// grapheme clusters, and pages and replays bounded only in rows. One free account's 8 unread
/// `Todos.List` pages and 8 unread `Subscribe(since: 0)` streams grew appd's RSS by 1.6–3.3 GB.
@Suite(.serialized, .timeLimit(.minutes(4))) struct HostileAccountTests {
    static func cluster(_ marks: Int) -> String { "b" + String(repeating: "\u{301}", count: marks) }

    static func json(_ text: String) -> [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]) ?? [:] }

    static func body(_ object: [String: Any]) -> String { String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self) }

    /// Signs up and finishes onboarding; the access token.
    static func account(_ port: UInt16, _ email: String) async throws -> String {
        let signUp = try await httpPost(port: port, path: "/v1/io.appd.Auth/SignUp", body: body(["email": email, "password": "a long password"]))
        let token = (json(signUp.body)["session"] as? [String: Any])?["accessToken"] as? String ?? ""
        #expect(!token.isEmpty, "\(signUp)")
        _ = try await httpPost(port: port, path: "/v1/io.appd.Auth/CompleteOnboarding", body: "{}", token: token)
        return token
    }

    static func residentKB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// A TCP connection that sends `request` and then never reads.
    static func unread(_ port: UInt16, _ request: String) throws -> Int32 {
        let fd = try connectTCP(port: port, receiveBuffer: 4096)
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return fd
    }

    static func request(_ path: String, _ body: String, token: String, accept: String = "application/json") -> String {
        "POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: \(accept)\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }

    @Test func textIsBoundedInScalarsAndBytes() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let named = try await httpPost(
            port: port, path: "/v1/io.appd.Auth/SignUp", body: Self.body(["email": "eve@example.com", "password": "a long password", "displayName": Self.cluster(5000)]))
        #expect(named.status == 400 && named.body.contains("displayName"), "\(named)")
        let token = try await Self.account(port, "mallory@example.com")
        let title = try await httpPost(port: port, path: "/v1/io.appd.Todos/Add", body: Self.body(["title": Self.cluster(5000)]), token: token)
        #expect(title.status == 400 && title.body.contains("title") && title.body.contains("200 characters"), "\(title)")
        let memory = try await httpPost(port: port, path: "/v1/io.appd.Chat/AddMemory", body: Self.body(["text": Self.cluster(5000)]), token: token)
        #expect(memory.status == 400 && memory.body.contains("text"), "\(memory)")
        let message = try await httpPost(port: port, path: "/v1/io.appd.Chat/CreateConversation", body: Self.body(["title": Self.cluster(5000)]), token: token)
        #expect(message.status == 400 && message.body.contains("title"), "\(message)")
        #expect(await daemon.stop() == 0)
    }

    /// The attack as found, at a tenth of its size: an account's largest todos, then 8 unread
    /// pages of 500 and 8 unread replays from 0. A client that stops reading holds at most about
    /// one page (1 MiB) of appd's memory: growth stays under 48 MiB (was ~80 MB per page here).
    @Test func unreadPagesAndReplaysHoldBoundedMemory() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)", "--account-call-burst", "1000"])
        let token = try await Self.account(port, "mallory@example.com")
        // 10,000 four-byte scalars: the largest notes (40 KB); 250 of them are 10 MB.
        let notes = String(repeating: "😀", count: 10_000)
        for i in 0..<250 {
            let added = try await httpPost(port: port, path: "/v1/io.appd.Todos/Add", body: Self.body(["title": "todo \(i)", "notes": notes]), token: token)
            #expect(added.status == 200, "\(added.status) \(added.body.prefix(200))")
        }
        let pid = daemon.process.processIdentifier
        let before = Self.residentKB(pid)
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<8 {
            held.append(try Self.unread(port, Self.request("/v1/io.appd.Todos/List", #"{"limit":500}"#, token: token)))
            held.append(try Self.unread(port, Self.request("/v1/io.appd.Bus/Subscribe", #"{"topics":[">"],"since":0}"#, token: token, accept: "text/event-stream")))
        }
        // Until appd has answered what it will (its RSS stops moving), then the figure.
        var last = before, peak = before
        _ = await eventually(timeout: .seconds(20)) {
            try? await Task.sleep(for: .milliseconds(300))
            let now = Self.residentKB(pid)
            defer { last = now }
            peak = max(peak, now)
            return now == last && now > before
        }
        let grown = (peak - before) / 1024
        print("unread pages and replays: appd RSS \(before / 1024) -> \(peak / 1024) MiB (+\(grown) MiB)")
        #expect(grown < 48, "appd's RSS grew by \(grown) MiB for 16 unread replies")
        // It still answers, and closing the clients gives the memory back to appd's pool.
        #expect(try await httpPost(port: port, path: "/v1/io.appd.Auth/WhoAmI", body: "{}", token: token).status == 200)
        #expect(await daemon.stop() == 0)
    }

    /// The export was built whole in memory, a long event history included. Its events now stop
    /// at `exportEventsMB` (here 1) of payloads, and the document says from where; the plugins'
    /// parts are whole (the account's storage quota bounds them).
    @Test func anExportsEventsAreBoundedInBytes() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)", "--account-call-burst", "5000", "--export-events-mb", "1"])
        let token = try await Self.account(port, "long@example.com")
        let title = String(repeating: "t", count: 190)
        // Notes are not in the events, so the titles carry the bytes: 4,500 todos.created events
        // of ~280 bytes each are past 1 MiB.
        for i in 0..<4_500 {
            let added = try await httpPost(port: port, path: "/v1/io.appd.Todos/Add", body: Self.body(["title": "\(i) \(title)"]), token: token)
            if added.status != 200 { Issue.record("add \(i): \(added.status) \(added.body.prefix(200))"); break }
        }
        let export = try await httpPost(port: port, path: "/v1/io.appd.Export/Mine", body: "{}", token: token)
        #expect(export.status == 200, "\(export.status) \(export.body.prefix(300))")
        let document = (Self.json(export.body)["export"] as? [String: Any]) ?? [:]
        let events = document["events"] as? [[String: Any]] ?? []
        let payloadBytes = events.compactMap { $0["payload"] }.reduce(0) { $0 + ((try? JSONSerialization.data(withJSONObject: $1).count) ?? 0) }
        let incomplete = document["eventsIncomplete"] as? [String: Any]
        #expect(incomplete?["fromSeq"] != nil, "the document says events were left out: \(document.keys.sorted())")
        #expect(payloadBytes <= 1 << 20 && events.count > 1_000, "\(events.count) events, \(payloadBytes) bytes of payloads")
        let todos = ((document["plugins"] as? [String: Any])?["todos"] as? [String: Any])?["todos"] as? [Any] ?? []
        #expect(todos.count == 4_500, "the plugins' parts are whole: \(todos.count)")
        #expect(await daemon.stop() == 0)
    }
}

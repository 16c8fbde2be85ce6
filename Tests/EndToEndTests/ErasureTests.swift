// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// Security review 2, finding 11: after an account was deleted no live row held its text, but
/// its bytes stayed in SQLite's freed pages and the write-ahead log. Now deleted content is
/// zeroed (`secure_delete`) and, once the plugins have erased their part, the log is copied in
/// and truncated: the account's text is in neither file.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ErasureTests {
    static func contains(_ path: String, _ marker: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        return data.range(of: Data(marker.utf8)) != nil
    }

    @Test func aDeletedAccountsTextIsGoneFromTheDatabaseFiles() async throws {
        let port = try freeTCPPort()
        let daemon = try await Daemon.start(["--http-listen", "127.0.0.1:\(port)"])
        let token = try await HostileAccountTests.account(port, "leaving@example.com")
        let marker = "erasure-marker-" + UUID().uuidString
        for i in 0..<20 {
            let added = try await httpPost(
                port: port, path: "/v1/io.appd.Todos/Add", body: HostileAccountTests.body(["title": "\(marker) \(i)", "notes": marker]), token: token)
            #expect(added.status == 200, "\(added)")
        }
        let memory = try await httpPost(port: port, path: "/v1/io.appd.Chat/AddMemory", body: HostileAccountTests.body(["text": marker]), token: token)
        #expect(memory.status == 200, "\(memory)")
        let database = daemon.directory + "/data/appd.db"
        #expect(Self.contains(database, marker) || Self.contains(database + "-wal", marker), "the marker is written somewhere first")
        let deleted = try await httpPost(port: port, path: "/v1/io.appd.Auth/DeleteAccount", body: #"{"password":"a long password"}"#, token: token)
        #expect(deleted.status == 200, "\(deleted)")
        let gone = await eventually(timeout: .seconds(40)) {
            !Self.contains(database, marker) && !Self.contains(database + "-wal", marker)
        }
        #expect(gone, "the marker is still in \(Self.contains(database, marker) ? "appd.db" : "appd.db-wal")")
        #expect(await daemon.stop() == 0)
    }
}

// SPDX-License-Identifier: Apache-2.0
@testable import Bus
@testable import Serving
@testable import BusCore
import Foundation
import Testing
@testable import Varlink

/// `VarlinkClient`'s typed calls against a real server: the reply as the command's type, a
/// stream's replies typed, an error reply thrown as the typed error the decoder knows (or as a
/// `VarlinkErrorReply`).
@Suite(.serialized, .timeLimit(.minutes(1))) struct TypedClientTests {
    struct Failed: Error, Equatable { let reason: String }

    static let decoding = ErrorDecoding { name, parameters in
        name == "io.appd.Test.Failed" ? Failed(reason: parameters["reason"]?.stringValue ?? "") : nil
    }

    /// Runs blocking client work on a thread of its own (not a cooperative one).
    func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    @Test func repliesAreTheirTypesAndErrorsAreTyped() async throws {
        let server = try TestServer()
        let path = server.path
        let outcome = try await onThread { () -> [String] in
            let client = try VarlinkClient(path: path, timeout: .seconds(10))
            var seen = [try client.call(TestServer.Echo(text: "hi")).text]
            try client.stream(TestServer.Count(upTo: 3)) { seen.append("n\($0.n)") }
            do {
                _ = try client.call(TestServer.Fail(), errors: Self.decoding)
            } catch let error as Failed {
                seen.append("typed: \(error.reason)")
            }
            do {
                _ = try client.call(TestServer.Fail())
            } catch let error as VarlinkErrorReply {
                seen.append("untyped: \(error.name)")
            }
            return seen
        }
        #expect(outcome == ["hi", "n1", "n2", "n3", "typed: on purpose", "untyped: io.appd.Test.Failed"])
        await server.stop()
    }
}

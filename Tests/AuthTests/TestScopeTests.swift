// SPDX-License-Identifier: Apache-2.0
import Contracts
import Foundation
import Storage
import Testing
import TestSupport

/// The one scoped way plugin tests start the system: what a harness opened is closed and removed
/// when its test's scope ends, whatever the test did; a harness made outside a scope is refused.
@Suite struct TestScopeTests {
    @Test func aScopeClosesTheHarnessDatabaseAndRemovesItsDirectoryWhateverTheTestDid() async throws {
        let scope = TestScope()
        let harness = try await TestScope.$current.withValue(scope) { () async throws -> PluginHarness in
            let h = try await Harness.make()
            _ = try await h.signUpAndIn()
            return h
        }
        // A test that throws half-way: the scope still releases what it made.
        struct Failed: Error {}
        await #expect(throws: Failed.self) {
            try await TestScope.$current.withValue(scope) {
                _ = try await harness.database.read { try $0.query("SELECT 1 AS n") }
                throw Failed()
            }
        }
        #expect(FileManager.default.fileExists(atPath: harness.directory), "kept while the scope lasts")
        await scope.end()
        #expect(!FileManager.default.fileExists(atPath: harness.directory), "the directory is gone")
        await #expect(throws: (any Error).self, "the database is closed") {
            _ = try await harness.database.read { try $0.query("SELECT 1 AS n") }
        }
    }

    @Test func aHarnessOutsideAScopeIsRefusedWithTheFix() async throws {
        await TestScope.$current.withValue(nil) {
            do {
                _ = try await Harness.make()
                Issue.record("a harness was made with nothing to close it")
            } catch {
                #expect("\(error)".contains("@Suite(.cleansUp)"), "\(error)")
            }
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Storage
import Synchronization
import Testing

/// What one test made that must go when it ends — databases to close, directories to remove —
/// whatever the test did: passed, failed an expectation, threw, or returned early. A suite that
/// makes harnesses says so once, `@Suite(.cleansUp)`; the harness registers what it opened with
/// the running test's scope (`TestScope.current`, a task-local, so helpers and child tasks find
/// it), and the scope releases it in reverse order after the test. A harness made outside such a
/// scope is refused (`TestScope.required`), so nothing a test opens is left to a hand-written close.
public final class TestScope: Sendable {
    @TaskLocal public static var current: TestScope?

    private let cleanups = Mutex<[@Sendable () async -> Void]>([])

    public init() {}

    /// The running test's scope, or the error that says how to get one.
    public static func required(by what: String) throws -> TestScope {
        guard let current else {
            throw HarnessError("\(what) needs the test's scope, which closes and removes what it opens: add .cleansUp to the suite, @Suite(.cleansUp)")
        }
        return current
    }

    /// Runs `cleanup` when the test ends (after the cleanups registered later).
    public func onEnd(_ cleanup: @escaping @Sendable () async -> Void) {
        cleanups.withLock { $0.append(cleanup) }
    }

    /// Closes `database` when the test ends (closing twice is harmless: a test may close it
    /// itself to open it again, as a restart does).
    public func closes(_ database: any Database) {
        onEnd { await database.close() }
    }

    /// A fresh private directory (mode 0700) under /tmp, removed with everything in it when
    /// the test ends.
    public func directory(_ prefix: String = "appd-test") throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("cannot create a temporary directory under /tmp") }
        let path = String(cString: made)
        onEnd { Self.remove(path) }
        return path
    }

    /// Releases everything, the newest first.
    public func end() async {
        let all = cleanups.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for cleanup in all.reversed() { await cleanup() }
    }

    /// Removes a directory tree.
    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Gives each test of the suite (or the one test) its `TestScope`, released when the test ends.
public struct CleansUp: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // A suite's own scope has nothing to release: each of its tests gets its own.
        if test.isSuite { return try await function() }
        let scope = TestScope()
        do {
            try await TestScope.$current.withValue(scope) { try await function() }
        } catch {
            await scope.end()
            throw error
        }
        await scope.end()
    }
}

extension Trait where Self == CleansUp {
    /// Each test's databases closed and directories removed when it ends (`TestScope`).
    public static var cleansUp: Self { CleansUp() }
}

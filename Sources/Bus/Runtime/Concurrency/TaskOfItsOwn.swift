// SPDX-License-Identifier: Apache-2.0
/// Runs `body` in a task of its own that ends when `body` returns, and returns what it returned.
///
/// For deep work done once before a long wait (opening a stream, the lookups before a chat
/// reply): a task keeps the memory of its deepest moment until it ends (the task allocator
/// reuses its slabs, never frees them), so deep work in the long-lived task would cost every
/// open stream those few KB for as long as it stays open. Here they are freed when `body`
/// returns. `body` starts at once on this thread (no hop); cancelling the caller cancels it.
public func inTaskOfItsOwn<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) async throws -> R {
    let task = Task.immediate(executorPreference: Deadline.executor) { try await body() }
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}

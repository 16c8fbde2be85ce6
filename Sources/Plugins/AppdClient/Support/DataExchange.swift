// SPDX-License-Identifier: Apache-2.0
import BusCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request and its whole answer, cancelled with the calling task.
///
/// Not `URLSession.data(for:)`: swift-corelibs-foundation (Linux) cancels its task from the
/// Swift task's cancellation handler, which runs under the task's status lock, and
/// `URLSessionTask.cancel()` then waits for the session's queue — while that queue, delivering
/// the answer, waits for the same lock to resume the caller. Both stop for good (seen in this
/// project's tests: a cancelled call hung its process). Here the cancel is handed to another
/// queue, so it never runs under that lock; a cancelled call ends with `URLError.cancelled` or
/// the answer that was already on its way.
enum DataExchange {
    static func data(for request: URLRequest, in session: URLSession) async throws -> (Data, URLResponse) {
        let pending = Locked(Pending())
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let data, let response {
                        continuation.resume(returning: (data, response))
                    } else {
                        continuation.resume(throwing: error ?? URLError(.badServerResponse))
                    }
                }
                task.resume()
                // Cancelled before the task existed: cancel it now (not under the status lock here).
                let cancelledAlready = pending.withLock { state in
                    state.task = task
                    return state.cancelled
                }
                if cancelledAlready { task.cancel() }
            }
        } onCancel: {
            let task = pending.withLock { state in
                state.cancelled = true
                return state.task
            }
            guard let task else { return }
            DispatchQueue.global().async { task.cancel() }
        }
    }

    private struct Pending {
        var task: URLSessionDataTask?
        var cancelled = false
    }
}

// SPDX-License-Identifier: Apache-2.0
import AppdClient
import Contracts
import Observation

/// One conversation: sends a message and shows the reply as it streams; `cancel()` stops it.
/// Over the free quota, `error` is `.paywall`.
@MainActor @Observable
public final class ChatViewModel {
    public private(set) var messages: [ChatMessage] = []
    /// The reply so far, while it streams.
    public private(set) var streaming: String?
    public private(set) var error: AppError?
    public let conversationId: String
    private let chat: any ChatServing
    private var replying: Task<Void, Never>?

    public init(chat: any ChatServing, conversationId: String) {
        self.chat = chat
        self.conversationId = conversationId
    }

    public func load() async {
        do {
            messages = try await chat.history(conversationId: conversationId).messages
        } catch {
            self.error = AppError(error)
        }
    }

    /// Sends `text` and streams the reply; returns when it is complete, fails or is cancelled.
    public func send(_ text: String) async {
        let replies = chat.send(conversationId: conversationId, text: text)
        let task = Task { @MainActor in
            streaming = ""
            defer { streaming = nil }
            do {
                for try await reply in replies {
                    if let delta = reply.delta { streaming = (streaming ?? "") + delta }
                    if reply.message != nil { messages = try await chat.history(conversationId: conversationId).messages }
                }
                error = nil
            } catch is CancellationError {
            } catch {
                self.error = AppError(error)
            }
        }
        replying = task
        await task.value
    }

    public func cancel() { replying?.cancel() }
}

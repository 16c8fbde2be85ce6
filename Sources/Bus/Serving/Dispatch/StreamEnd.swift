// SPDX-License-Identifier: Apache-2.0
/// A reply whose outcome is known only later (a stream): gates see replies generically and
/// ask through this protocol.
public protocol FinishObservable: Sendable {
    func whenFinished(_ body: @escaping @Sendable (StreamEnd) async -> Void) async
}

/// How a stream's producer ended.
public struct StreamEnd: Sendable {
    /// nil when it delivered its final reply; the error when it failed or was cancelled.
    public let error: (any Error)?
    /// Whether it had said the caller got what the stream costs (`ReplyWriter.markUsed`): a
    /// stream that fails after that still cost its use.
    public let used: Bool
}

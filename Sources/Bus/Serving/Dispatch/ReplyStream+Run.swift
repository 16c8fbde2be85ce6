// SPDX-License-Identifier: Apache-2.0
extension ReplyStream {
    /// Runs a deferred stream's producer (one opened with `CommandBus.callStream(deferred:)`) in
    /// the calling task: each intermediate reply goes to `sink` as it is sent (the producer
    /// waits while `sink` waits), and the final reply is returned. No task and no buffer between
    /// the handler and the transport.
    public func run(into sink: @escaping @Sendable (Element) async throws -> Void) async throws -> Element {
        try await channel.run(into: sink)
    }
}

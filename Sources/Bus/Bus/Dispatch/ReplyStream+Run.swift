extension ReplyStream {
    /// Whether the consumer is to run the producer in its own task (`run(into:)`): a stream
    /// opened for a transport that writes replies as they come (`EventBus.callStream(deferred:)`).
    public var isDeferred: Bool { channel.isDeferred }

    /// Runs a deferred stream's producer in the calling task: each intermediate reply goes to
    /// `sink` as it is sent (the producer waits while `sink` waits), and the final reply is
    /// returned. No task and no buffer between the handler and the transport.
    public func run(into sink: @escaping @Sendable (Element) async throws -> Void) async throws -> Element {
        try await channel.run(into: sink)
    }
}

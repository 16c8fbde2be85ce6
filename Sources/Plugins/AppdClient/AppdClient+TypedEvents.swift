// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

/// One event of a type the app named, with where it stands on the log.
public struct TypedEvent<E: Event>: Sendable {
    public let event: E
    /// Its place on the durable log: keep the last one to resume from with `since`.
    public let sequence: Int64?
    /// When it happened (RFC 3339, as appd sent it).
    public let time: String
    /// Live events of the subscription missed before this one (the app read too slowly).
    public let dropped: Int
}

extension AppdClient {
    /// The signed-in user's events of one type (`TodoCreated.self`), decoded into it, from the
    /// durable log after `since` and then live; resumed after a dropped connection as `subscribe`
    /// is. A redacted event (its account was erased) is skipped; one that does not decode as the
    /// type ends the stream with `AppdClientError.unexpectedReply`, naming it.
    public func subscribe<E: Event>(to type: E.Type, since: Int64? = nil) -> AsyncThrowingStream<TypedEvent<E>, any Error> {
        let events = subscribe(topics: [E.topic], since: since)
        return AsyncThrowingStream { continuation in
            // Unstructured: the stream's producer (AsyncThrowingStream's builder is synchronous); cancelled when the consumer stops.
            let task = Task {
                do {
                    for try await delivered in events where delivered.topic == E.topic && delivered.redacted != true {
                        let event: E
                        do {
                            event = try delivered.payload.decode(as: E.self)
                        } catch {
                            throw AppdClientError.unexpectedReply("\(E.topic) #\(delivered.seq ?? -1) does not decode as \(E.self): \(error)")
                        }
                        continuation.yield(TypedEvent(event: event, sequence: delivered.seq, time: delivered.time, dropped: delivered.dropped))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

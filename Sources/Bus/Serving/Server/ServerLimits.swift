// SPDX-License-Identifier: Apache-2.0
/// The control socket's limits; every one is configurable.
public struct ServerLimits: Sendable, Hashable {
    /// Largest message accepted; a larger one closes the connection.
    public var maxMessageBytes: Int = 1 << 20
    /// The ceiling `maxMessageBytes` may be configured to.
    public static let hardMaxMessageBytes = VarlinkFrameReader.hardMaxMessageBytes
    /// Connections on the control socket, and per peer uid there.
    public var maxConnections: Int = 128
    public var maxConnectionsPerUID: Int = 32
    /// Connections on each external plugin's own socket: a budget of the plugin's, apart from
    /// the control socket's (security review finding 15: a plugin running as the operator's
    /// uid used the operator's 32 and locked appctl out).
    public var maxConnectionsPerPlugin: Int = 16
    /// Calls read but not yet answered per connection; past it the server stops reading.
    public var maxQueuedCalls: Int = 64
    /// Reply bytes a client has not read; past it the connection is closed.
    public var maxPendingOutputBytes: Int = 8 << 20
    /// A stream (a call with `more`) pauses when its client has an eighth of
    /// `maxPendingOutputBytes` unread, and resumes when half of that is read: a slow reader
    /// slows its stream down (a subscription then drops per its policy and says so) instead of
    /// being disconnected. A stream paused this long without its client reading is closed.
    public var stalledStreamTimeout: Duration = .seconds(60)
    /// A connection that has not sent one whole message by then is closed.
    public var firstMessageTimeout: Duration = .seconds(10)
    /// Deadline of each call.
    public var callTimeout: Duration = .seconds(30)
    /// How long shutdown waits for in-flight calls.
    public var drainTimeout: Duration = .seconds(10)
    /// A connection's worker task that has waited this long for a call ends (the next call
    /// starts a new one): a task keeps the memory of its deepest call until it ends, ~6 KB per
    /// idle signed-in connection. (Checked by the loop's sweep, every ~100 ms.)
    public var idleWorkerRetirement: Duration = .seconds(1)

    public init() {}

    /// Unread bytes at which a stream pauses, and the level it resumes at.
    var streamHighWater: Int { max(1, maxPendingOutputBytes / 8) }
    var streamLowWater: Int { streamHighWater / 2 }

    /// Checks the values, naming the first that is out of range.
    public func validated() throws(InvalidLimit) -> ServerLimits {
        if maxMessageBytes < 1024 || maxMessageBytes > Self.hardMaxMessageBytes {
            throw InvalidLimit(name: "maxMessageBytes", reason: "must be between 1024 and \(Self.hardMaxMessageBytes)")
        }
        if maxConnections < 1 { throw InvalidLimit(name: "maxConnections", reason: "must be at least 1") }
        if maxConnectionsPerUID < 1 { throw InvalidLimit(name: "maxConnectionsPerUID", reason: "must be at least 1") }
        if maxConnectionsPerPlugin < 1 { throw InvalidLimit(name: "maxConnectionsPerPlugin", reason: "must be at least 1") }
        if maxQueuedCalls < 1 { throw InvalidLimit(name: "maxQueuedCalls", reason: "must be at least 1") }
        if maxPendingOutputBytes < maxMessageBytes {
            throw InvalidLimit(name: "maxPendingOutputBytes", reason: "must be at least maxMessageBytes")
        }
        if stalledStreamTimeout <= .zero { throw InvalidLimit(name: "stalledStreamTimeout", reason: "must be more than 0") }
        if idleWorkerRetirement <= .zero { throw InvalidLimit(name: "idleWorkerRetirement", reason: "must be more than 0") }
        return self
    }
}

/// A limit configured out of range.
public struct InvalidLimit: Error, Equatable, CustomStringConvertible {
    public let name: String
    public let reason: String
    public var description: String { "limit \(name) \(reason)" }
}

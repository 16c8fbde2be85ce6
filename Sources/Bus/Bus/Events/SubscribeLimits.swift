// SPDX-License-Identifier: Apache-2.0
/// Bounds on `io.appd.Bus.Subscribe` (security review findings 2 and 3): how much one
/// subscription may ask for, how many streams one account may hold, and how long a signed-in
/// user's stream lives on one session check.
public struct SubscribeLimits: Sendable, Hashable {
    /// Topics or patterns in one subscription (each is tested against every published topic).
    public var maxTopics: Int
    /// Subscribe streams one account holds open at once, over both transports.
    public var maxStreamsPerAccount: Int
    /// How often a signed-in user's stream checks its session again even when nothing woke it
    /// (an access token that expired; a revocation by another instance on shared PostgreSQL).
    public var sessionRecheck: Duration
    /// The longest a signed-in user's stream stays open; the client subscribes again with
    /// `since` (SSE: `Last-Event-ID`) and loses nothing.
    public var maxUserStreamLifetime: Duration

    public init(
        maxTopics: Int = 64, maxStreamsPerAccount: Int = 8, sessionRecheck: Duration = .seconds(30),
        maxUserStreamLifetime: Duration = .seconds(3600)
    ) {
        self.maxTopics = max(1, maxTopics)
        self.maxStreamsPerAccount = max(1, maxStreamsPerAccount)
        self.sessionRecheck = max(.milliseconds(10), sessionRecheck)
        self.maxUserStreamLifetime = max(.milliseconds(10), maxUserStreamLifetime)
    }
}

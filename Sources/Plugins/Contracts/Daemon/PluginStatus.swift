// SPDX-License-Identifier: Apache-2.0
/// A plugin's lifecycle state, as `appctl plugins` shows it.
public enum PluginState: String, Sendable, Codable, CaseIterable {
    case starting, running, degraded, failed, stopped
}

/// One plugin's state with its last error and restart count.
public struct PluginStatus: Sendable, Codable, Equatable {
    public var name: String
    public var version: String
    public var state: PluginState
    public var lastError: String?
    public var restarts: Int
    /// builtin (compiled into appd) or external (a supervised process).
    public var kind: String = "builtin"
    /// An external plugin's process, while it runs.
    public var pid: Int?
    /// The varlink interfaces it serves.
    public var interfaces: [String] = []
    /// An external plugin's confinement, e.g. "bubblewrap, no network, uid 61234, 256 MiB".
    public var sandbox: String?
    /// What an external plugin's manifest asks for ("calls …; capabilities …; environment …").
    public var grants: String?

    public init(
        name: String, version: String, state: PluginState, lastError: String? = nil, restarts: Int = 0, kind: String = "builtin",
        pid: Int? = nil, interfaces: [String] = [], sandbox: String? = nil, grants: String? = nil
    ) {
        self.sandbox = sandbox
        self.grants = grants
        self.name = name
        self.version = version
        self.state = state
        self.lastError = lastError
        self.restarts = restarts
        self.kind = kind
        self.pid = pid
        self.interfaces = interfaces
    }
}

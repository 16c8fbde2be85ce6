// SPDX-License-Identifier: Apache-2.0
/// Which events one subscriber may receive, decided once per `Subscribe` from who is asking
/// and enforced per event, live and replayed.
public enum EventVisibility: Sendable, Equatable {
    /// A peer-credential admin: every event except capability-only ones.
    case admin
    /// A signed-in user: `owner`-audience events about them.
    case user(String)
    /// An external plugin's connection: its declared topics, capability events only with the capability.
    case plugin(PluginScope)
    /// In-process code (plugins' own consumers): everything.
    case everything

    /// Whether an event of `audience` about `owner` may reach this subscriber.
    public func admits(audience: EventAudience, owner: String?) -> Bool {
        switch (self, audience) {
        case (.everything, _): true
        case (.admin, .capability): false
        case (.admin, _): true
        case (.user(let id), .owner): owner == id
        case (.user, _): false
        case (.plugin(let scope), .capability(let name)): scope.capabilities.contains(name)
        case (.plugin, _): true
        }
    }
}

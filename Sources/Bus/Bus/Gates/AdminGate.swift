// SPDX-License-Identifier: Apache-2.0
import CSystem
#if canImport(Glibc)
import Glibc
#endif

/// Lets `.admin` commands through only for a privileged peer: the daemon's own uid, root, or a
/// member of the configured admin group. Every admin call is audited (peer, method, outcome).
public struct AdminGate: Gate {
    public let daemonUID: UInt32
    public let adminGroup: UInt32?
    private let audit: Logger

    public init(daemonUID: UInt32 = getuid(), adminGroup: UInt32? = nil, audit: Logger = Logger(label: "appd.audit")) {
        self.daemonUID = daemonUID
        self.adminGroup = adminGroup
        self.audit = audit
    }

    public var name: String { "admin" }

    public var position: GatePosition { .admin }

    public func covers(_ requirement: Requirement) -> Bool { requirement == .admin }

    /// By the method's requirement alone (so `mayApply` is exact).
    public func applies(to envelope: Envelope) -> Bool { mayApply(toMethodRequiring: envelope.requirements) }
    public func mayApply(toMethodRequiring requirements: [Requirement]) -> Bool { requirements.contains(.admin) }

    public func handle<Reply: Sendable>(_ envelope: Envelope, next: (Envelope) async throws -> Reply) async throws -> Reply {
        guard applies(to: envelope) else { return try await next(envelope) }
        let who = envelope.caller.peer.map { "\($0.uid)" } ?? (envelope.caller.plugin.map { "plugin:\($0)" } ?? "daemon")
        // A plugin's connection runs as appd's uid: the line must say which plugin it was.
        var metadata: LogMetadata = ["peer.uid": who, "method": envelope.name]
        if let plugin = envelope.caller.plugin ?? envelope.caller.connection?.pluginScope?.plugin { metadata["plugin"] = plugin }
        if let console = envelope.caller.console { metadata["console.session"] = console }
        guard isPrivileged(envelope.caller) || declares(envelope) else {
            audit.notice("admin call denied", metadata: metadata.merging(["outcome": "denied"]) { $1 })
            throw PermissionDenied(reason: "\(envelope.name) needs the daemon's uid, root, or the admin group")
        }
        do {
            let reply = try await next(envelope)
            audit.notice("admin call", metadata: metadata.merging(["outcome": "ok"]) { $1 })
            return reply
        } catch {
            audit.notice(
                "admin call", metadata: metadata.merging(["outcome": "error", "error": "\(error)"]) { $1 })
            throw error
        }
    }

    /// A plugin's connection may call an admin method its manifest lists under `calls` (the
    /// operator who installed the plugin granted it) and the bus methods every plugin may use
    /// (whose handlers hold it to its manifest's topics). Nothing else, whatever its uid.
    private func declares(_ envelope: Envelope) -> Bool {
        envelope.caller.connection?.pluginScope?.mayCall(envelope.name) == true
    }

    /// The credentials a console session acts with, fixed when an admin peer asks for its link:
    /// that peer's, with the admin group as its group when membership made it an admin (its
    /// process, where supplementary groups are read, is gone by the time the browser calls).
    /// nil when the caller is not a privileged peer.
    public func consoleCredentials(of caller: Caller) -> PeerCredentials? {
        guard isPrivileged(caller), var peer = caller.peer else { return nil }
        if peer.uid != 0, peer.uid != daemonUID, let group = adminGroup { peer.gid = group }
        peer.pid = 0
        return peer
    }

    /// In-process calls from the daemon itself are privileged; plugins and users are not. A
    /// connection that is a plugin's (it presented the plugin's credential, or came in on the
    /// plugin's own socket) is never privileged by its uid: plugins may run as appd's user.
    public func isPrivileged(_ caller: Caller) -> Bool {
        if caller.connection?.pluginScope != nil { return false }
        // No peer: the daemon itself, unless the call came from a plugin, a user or the network.
        guard let peer = caller.peer else { return caller.plugin == nil && caller.principal == nil && caller.remoteAddress == nil }
        if peer.uid == 0 || peer.uid == daemonUID { return true }
        guard let group = adminGroup else { return false }
        // A console session has no process to ask: the operator's membership is read from the
        // user database at every call, so one who leaves the group loses the console with it
        // (security review 2, finding 9), not 12 hours later.
        if caller.console != nil { return Self.user(peer.uid, isIn: group) }
        return peer.gid == group || (peer.pid > 0 && appd_pid_in_group(peer.pid, group) == 1)
    }

    /// Whether the account `uid` has `group` as its primary group or lists it among its others
    /// (the user database through NSS: `getgrouplist`).
    static func user(_ uid: UInt32, isIn group: UInt32) -> Bool {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else { return false }
        if entry.pw_gid == group { return true }
        var count: Int32 = 256
        var groups = [gid_t](repeating: 0, count: Int(count))
        guard getgrouplist(name, entry.pw_gid, &groups, &count) >= 0 else { return false }
        return groups.prefix(Int(count)).contains(group)
    }
}

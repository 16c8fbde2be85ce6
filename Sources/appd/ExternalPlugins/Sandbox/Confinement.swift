// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// How the host confines every plugin it starts: bwrap's path (nil: no sandbox, by the
/// operator's choice) or why plugins cannot start; the uids of plugins when appd is root.
struct Confinement: Sendable {
    let bubblewrap: Result<String?, PluginStartError>
    let uids: PluginUIDs?

    init(settings: ExternalPluginSettings) {
        switch settings.sandbox.mode {
        case .none: bubblewrap = .success(nil)
        case .bubblewrap:
            bubblewrap = settings.sandbox.locateBubblewrap().map { $0 }.mapError { PluginStartError($0.description, permanent: true) }
        }
        uids = getuid() == 0 ? PluginUIDs(file: settings.uidFile, range: settings.sandbox.uidRange) : nil
    }

    var sandboxed: Bool { (try? bubblewrap.get()) != nil }

    /// The resource limits for `setrlimit` (the process count is added with a uid of its own).
    func limits(_ limits: ResourceLimits) -> [(resource: Int32, value: UInt64)] {
        var out: [(resource: Int32, value: UInt64)] = [
            (Int32(RLIMIT_NOFILE.rawValue), UInt64(limits.openFiles)),
            // No core files: they would hold whatever secrets the plugin had in memory.
            (Int32(RLIMIT_CORE.rawValue), 0),
            // No file past what its data folder may hold (SIGXFSZ, then EFBIG).
            (Int32(RLIMIT_FSIZE.rawValue), UInt64(limits.dataMB) << 20),
        ]
        if let mb = limits.addressSpaceMB { out.append((Int32(RLIMIT_AS.rawValue), UInt64(mb) << 20)) }
        if let seconds = limits.cpuSeconds { out.append((Int32(RLIMIT_CPU.rawValue), UInt64(seconds))) }
        return out
    }

    /// For `appctl plugins`.
    func summary(_ sandbox: SandboxManifest) -> String {
        // Three states: confined, unconfined by the operator's choice, or not started because
        // the sandbox the operator asked for cannot be set up (bwrap missing).
        if case .failure = bubblewrap { return "bubblewrap unavailable: not started" }
        var parts = [sandboxed ? "bubblewrap" : "none", sandboxed ? (sandbox.network ? "host network" : "no network") : "unconfined"]
        if sandboxed, getuid() == 0 { parts.append("own uid") }
        parts.append("\(sandbox.limits.memoryMB) MiB")
        return parts.joined(separator: ", ")
    }
}

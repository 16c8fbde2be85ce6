// SPDX-License-Identifier: Apache-2.0
import Bus

/// The `sandbox` section of a plugin.json: what the plugin may reach beyond its own folder,
/// its data folder and appd's socket, and the resources it may use.
public struct SandboxManifest: Sendable, Equatable {
    /// The host's network (true), or none at all: only a loopback of its own (false).
    public var network = false
    /// Host paths it may read (its runtime, a virtualenv), mounted read-only at the same path.
    public var readOnlyPaths: [String] = []
    public var limits = ResourceLimits()

    public init() {}

    static func parse(_ value: JSONValue) throws(ManifestProblem) -> SandboxManifest {
        guard let table = value.objectValue else { throw ManifestProblem("'sandbox' must be an object: {\"network\": false, \"readOnlyPaths\": [], \"limits\": {}}") }
        let known = ["network", "readOnlyPaths", "limits"]
        if let unknown = table.keys.sorted().first(where: { !known.contains($0) }) {
            throw ManifestProblem("sandbox: unknown key '\(unknown)'" + (EditDistance.closest(to: unknown, in: known).map { "; did you mean '\($0)'?" } ?? ""))
        }
        var sandbox = SandboxManifest()
        if let network = table["network"] {
            guard case .bool(let flag) = network else { throw ManifestProblem("sandbox.network must be true or false") }
            sandbox.network = flag
        }
        if let paths = table["readOnlyPaths"] {
            guard case .array(let items) = paths else { throw ManifestProblem("sandbox.readOnlyPaths must be a list of absolute paths") }
            for item in items {
                guard let path = item.stringValue, path.hasPrefix("/"), !path.split(separator: "/").contains("..") else {
                    throw ManifestProblem("sandbox.readOnlyPaths: \(item.stringValue.map { "'\($0)'" } ?? "a non-string") is not an absolute path without '..'")
                }
                sandbox.readOnlyPaths.append(path)
            }
        }
        if let limits = table["limits"] { sandbox.limits = try ResourceLimits.parse(limits) }
        return sandbox
    }
}

/// What one plugin process (and whatever it starts) may use. Applied with `setrlimit` in the
/// child before it starts; memory also by appd, which measures the sandbox's resident memory
/// and stops a plugin over its limit with the reason.
public struct ResourceLimits: Sendable, Equatable {
    /// Resident memory of all its processes together, in MiB (appd checks it every second).
    public var memoryMB = 256
    /// Address space per process, in MiB (`RLIMIT_AS`); nil: unlimited (runtimes that reserve
    /// large virtual ranges, such as Go's or the JVM's, need that).
    public var addressSpaceMB: Int? = nil
    /// Open descriptors per process (`RLIMIT_NOFILE`).
    public var openFiles = 256
    /// Processes and threads of its uid (`RLIMIT_NPROC`); applied only when the plugin has a
    /// uid of its own (appd runs as root), since otherwise appd's own threads would count.
    public var processes = 64
    /// CPU seconds per process, from each (re)start (`RLIMIT_CPU`: SIGKILL when spent); nil:
    /// unlimited.
    public var cpuSeconds: Int? = nil
    /// What its data folder may hold, in MiB: no file grows past it (`RLIMIT_FSIZE`), and appd
    /// stops a plugin whose folder holds more (security review finding 6).
    public var dataMB = 1024
    /// Files and folders its data folder may hold: a walk that finds more counts as over the
    /// limit (its bytes could hide behind them).
    public var dataEntries = 100_000

    /// The sandbox's `/tmp`: half the memory limit. Its files are memory, so appd counts them
    /// with the resident memory against `memoryMB`.
    public var tmpBytes: UInt64 { UInt64(max(1, memoryMB / 2)) << 20 }
    /// The sandbox's `/dev/shm`: an eighth of the memory limit, counted the same way (the rest
    /// of `/dev` is read-only).
    public var shmBytes: UInt64 { UInt64(max(1, memoryMB / 8)) << 20 }

    public init() {}

    static func parse(_ value: JSONValue) throws(ManifestProblem) -> ResourceLimits {
        guard let table = value.objectValue else { throw ManifestProblem("sandbox.limits must be an object") }
        let known = ["memoryMB", "addressSpaceMB", "openFiles", "processes", "cpuSeconds", "dataMB", "dataEntries"]
        if let unknown = table.keys.sorted().first(where: { !known.contains($0) }) {
            throw ManifestProblem("sandbox.limits: unknown key '\(unknown)'" + (EditDistance.closest(to: unknown, in: known).map { "; did you mean '\($0)'?" } ?? ""))
        }
        func number(_ key: String, _ range: ClosedRange<Int64>) throws(ManifestProblem) -> Int? {
            guard let value = table[key] else { return nil }
            guard case .int(let n) = value, range.contains(n) else {
                throw ManifestProblem("sandbox.limits.\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return Int(n)
        }
        var limits = ResourceLimits()
        if let n = try number("memoryMB", 16...1_048_576) { limits.memoryMB = n }
        limits.addressSpaceMB = try number("addressSpaceMB", 64...16_777_216)
        if let n = try number("openFiles", 16...1_048_576) { limits.openFiles = n }
        if let n = try number("processes", 1...65_536) { limits.processes = n }
        limits.cpuSeconds = try number("cpuSeconds", 1...31_536_000)
        if let n = try number("dataMB", 1...16_777_216) { limits.dataMB = n }
        if let n = try number("dataEntries", 16...10_000_000) { limits.dataEntries = n }
        return limits
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// A plugin folder that passed the checks.
public struct DiscoveredPlugin: Sendable, Equatable {
    public var manifest: ExternalManifest
    public var folder: String
    /// The executable's absolute path.
    public var executable: String
}

/// A folder that was skipped, and why.
public struct PluginProblem: Sendable, Equatable {
    public var folder: String
    public var reason: String
}

/// Reads plugin folders (`<directory>/<plugin>/plugin.json`) in directory order. A broken
/// manifest is reported and skipped, never fatal; the first plugin of a name wins and shadowed
/// ones are reported. A manifest, executable or folder that other users can write is refused.
public enum PluginDirectoryScanner {
    public static func scan(_ directories: [String]) -> (plugins: [DiscoveredPlugin], problems: [PluginProblem]) {
        var plugins: [DiscoveredPlugin] = []
        var problems: [PluginProblem] = []
        for directory in directories {
            for entry in listing(directory) {
                let folder = directory + "/" + entry
                guard isDirectory(folder), access(folder + "/plugin.json", F_OK) == 0 else { continue }
                do throws(ManifestProblem) {
                    let plugin = try load(folder)
                    if let first = plugins.first(where: { $0.manifest.name == plugin.manifest.name }) {
                        problems.append(PluginProblem(folder: folder, reason: "shadowed by \(first.folder) (the first plugin of a name wins)"))
                        continue
                    }
                    plugins.append(plugin)
                } catch {
                    problems.append(PluginProblem(folder: folder, reason: error.description))
                }
            }
        }
        return (plugins, problems)
    }

    static func load(_ folder: String) throws(ManifestProblem) -> DiscoveredPlugin {
        try checkOwnership(folder, what: "the plugin folder")
        let manifestPath = folder + "/plugin.json"
        try checkOwnership(manifestPath, what: "plugin.json")
        guard let bytes = readFile(manifestPath, limit: 256 * 1024) else { throw ManifestProblem("plugin.json cannot be read (or is over 256 KiB)") }
        let manifest = try ExternalManifest.parse(bytes)
        let executable = manifest.executable.hasPrefix("/") ? manifest.executable : folder + "/" + manifest.executable
        try checkSpawnPath(executable: executable, folder: folder)
        return DiscoveredPlugin(manifest: manifest, folder: folder, executable: executable)
    }

    /// What is checked again before every spawn, not only at scan time (a file swapped after
    /// the scan must not run as appd's user): the executable (through any link), and every
    /// directory above it and above the plugin's folder, up to `/`. Each must be owned by root
    /// or appd's user and not writable by others; a root-owned sticky directory (`/tmp`) is
    /// fine, since no one else can rename or replace what is in it.
    public static func checkSpawnPath(executable: String, folder: String) throws(ManifestProblem) {
        guard access(executable, X_OK) == 0 else { throw ManifestProblem("the executable \(executable) does not exist or is not executable") }
        try checkOwnership(executable, what: "the executable")
        guard let resolved = realpath(executable, nil) else { throw ManifestProblem("the executable \(executable) cannot be resolved") }
        let target = String(cString: resolved)
        free(resolved)
        for directory in FileSystem.ancestors(of: target) + [folder] + FileSystem.ancestors(of: folder) {
            if let reason = FileSystem.untrustedReason(directory: directory, allowingStickyRoot: true) {
                throw ManifestProblem("the directory \(directory) \(reason); a plugin must sit where only root or appd's user can change it")
            }
        }
    }

    /// Refuses a file other users could change: owned by root or appd's user, not writable by
    /// group or others.
    static func checkOwnership(_ path: String, what: String) throws(ManifestProblem) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw ManifestProblem("\(what) \(path) cannot be read: \(String(cString: strerror(errno)))") }
        guard info.st_uid == 0 || info.st_uid == getuid() else {
            throw ManifestProblem("\(what) \(path) belongs to another user (uid \(info.st_uid)); it must be owned by root or appd's user")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw ManifestProblem("\(what) \(path) is writable by other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod go-w it")
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func listing(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    static func readFile(_ path: String, limit: Int) -> [UInt8]? { FileSystem.readFile(path, limit: limit) }
}

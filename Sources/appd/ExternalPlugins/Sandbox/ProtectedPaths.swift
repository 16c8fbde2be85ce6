// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// appd's own files — its data directory (database, plugins' data, keys it made), socket,
/// config file, key files, backups — and the plugin
/// directories (other plugins' folders). No path a plugin is shown may be one of them, contain
/// one or lie under one: a bind of appd's data directory would give a plugin every account's
/// data, and one of its socket an admin connection (security review 2, finding 2).
public struct ProtectedPaths: Sendable, Equatable {
    public private(set) var paths: [String] = []
    /// Folders a plugin's own folder may lie in (the plugin directories): paths inside its own
    /// folder are allowed there, the rest of the directory is not.
    public private(set) var pluginDirectories: [String] = []

    public init() {}

    public mutating func protect(_ path: String) {
        let clean = Self.normalized(path)
        guard clean != "/", !paths.contains(clean) else { return }
        paths.append(clean)
    }

    public mutating func protectPluginDirectory(_ path: String) {
        let clean = Self.normalized(path)
        if !pluginDirectories.contains(clean) { pluginDirectories.append(clean) }
    }

    /// Why `path` may not be shown to the plugin whose folder is `folder`, or nil. Both the
    /// path as written and where its symbolic links lead are checked.
    public func refusal(of path: String, folder: String) -> String? {
        let forms = Set([Self.normalized(path), Self.resolved(path)].compactMap { $0 })
        for form in forms {
            if form == "/" { return "\(path) is the whole file system, appd's own files included" }
            // Inside its own folder (which it sees anyway) a plugin directory is no matter.
            let directories = Self.within(form, Self.normalized(folder)) ? [] : pluginDirectories
            for protected in paths + directories {
                for target in Set([protected, Self.resolved(protected) ?? protected]) where Self.overlaps(form, target) {
                    let how = form == target ? "is" : (Self.within(form, target) ? "lies under" : "contains")
                    return "\(path) \(how) \(target), which is appd's own (its data, socket, configuration, keys, backups or another plugin's folder)"
                }
            }
        }
        return nil
    }

    static func overlaps(_ a: String, _ b: String) -> Bool { within(a, b) || within(b, a) }

    /// Whether `path` is `folder` or lies under it.
    static func within(_ path: String, _ folder: String) -> Bool {
        path == folder || folder == "/" || path.hasPrefix(folder + "/")
    }

    /// Without repeated or trailing slashes and `.` parts (`..` is refused by the manifest).
    static func normalized(_ path: String) -> String {
        let parts = path.split(separator: "/").filter { $0 != "." }
        return "/" + parts.joined(separator: "/")
    }

    /// Where the path's symbolic links lead, or nil when it does not exist.
    static func resolved(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }
}

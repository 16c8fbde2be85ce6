// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem

/// The `bwrap` command line that starts one plugin in its sandbox, and the descriptors it
/// needs: the plugin's folder, its data folder, appd's socket for it and each extra read-only
/// path are opened here (O_PATH) and mounted from the descriptor, so a plugin with a uid of
/// its own gets them even where its uid could not walk the path (appd's 0700 data directory).
struct BubblewrapCommand {
    /// argv, starting with bwrap's path.
    var arguments: [String] = []
    /// Descriptors the child keeps, at 4, 5, … in this order (fd 3 is the plugin's socket).
    var descriptors: [Int32] = []

    /// - Parameters:
    ///   - hidden: host paths to hide where they lie inside a tree the plugin sees.
    ///   - socket: appd's socket for this plugin, mounted at `PluginSandbox.socketInside`.
    init(
        bubblewrap: String, executable: String, arguments plugin: [String], folder: String, data: String, socket: String,
        readOnly: [String], hidden: [String], network: Bool, tmpBytes: UInt64, shmBytes: UInt64, credentials: PluginCredentialFiles? = nil
    ) throws(PluginStartError) {
        arguments = [bubblewrap, "--unshare-all", "--unshare-user"]
        if network { arguments.append("--share-net") }
        arguments += ["--disable-userns", "--die-with-parent", "--new-session", "--hostname", "appd-plugin"]
        // First the fresh mounts, so that the binds below (which may lie under /tmp) stay on top.
        // Each writable tmpfs has a size (else half the host's memory, and its pages are not
        // the plugin's resident memory): /tmp and /dev/shm, sized from the memory limit; the
        // rest of /dev is read-only (its devices still work).
        arguments += ["--proc", "/proc", "--dev", "/dev", "--size", "\(shmBytes)", "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        arguments += ["--size", "\(tmpBytes)", "--tmpfs", "/tmp"]
        var visible: [String] = []
        for path in PluginSandbox.systemPaths {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFLNK {
                var target = [CChar](repeating: 0, count: 4096)
                let n = readlink(path, &target, target.count - 1)
                guard n > 0 else { continue }
                arguments += ["--symlink", String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self), path]
            } else if info.st_mode & S_IFMT == S_IFDIR {
                arguments += ["--ro-bind", path, path]
                visible.append(path)
            }
        }
        for path in readOnly {
            try mount(path, at: path, readOnly: true, what: "read-only path")
            visible.append(path)
        }
        // Hidden paths: only those inside what it sees (hiding elsewhere would create them).
        for path in hidden where visible.contains(where: { ProtectedPaths.within(path, $0) }) {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                arguments += ["--tmpfs", path]
            } else {
                arguments += ["--ro-bind", "/dev/null", path]
            }
        }
        try mount(folder, at: folder, readOnly: true, what: "plugin folder")
        try mount(data, at: data, readOnly: false, what: "data folder")
        try mount(socket, at: PluginSandbox.socketInside, readOnly: false, what: "appd socket")
        // Its key files, copied by bwrap from descriptors appd opened into read-only files.
        if let credentials, !credentials.files.isEmpty {
            arguments += ["--dir", PluginCredentialFiles.inside]
            for file in credentials.files {
                arguments += ["--ro-bind-data", "\(4 + descriptors.count)", PluginCredentialFiles.inside + "/" + file.name]
                descriptors.append(file.fd)
            }
        }
        arguments += ["--chdir", folder]
        // The plugin is not bwrap's child but its grandchild, with a pid of its own inside the
        // sandbox: a shell sets LISTEN_PID to that pid and becomes the plugin.
        arguments += ["--", "/bin/sh", "-c", "LISTEN_PID=$$; export LISTEN_PID; unset PWD; exec \"$@\"", "appd-plugin", executable] + plugin
    }

    private mutating func mount(_ path: String, at inside: String, readOnly: Bool, what: String) throws(PluginStartError) {
        let fd = appd_open_path(path)
        guard fd >= 0 else { throw PluginStartError("cannot open its \(what) \(path) for the sandbox: \(String(cString: strerror(errno)))") }
        arguments += [readOnly ? "--ro-bind-fd" : "--bind-fd", "\(4 + descriptors.count)", inside]
        descriptors.append(fd)
    }

    /// Closes appd's copies of the descriptors (after the fork).
    func close() {
        for fd in descriptors { _ = Glibc.close(fd) }
    }
}

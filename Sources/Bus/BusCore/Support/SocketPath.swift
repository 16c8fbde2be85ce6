// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the daemon's socket lives when nothing says otherwise.
public enum SocketPath {
    /// `--socket` > `APPD_SOCKET` > root: `/run/appd/appd.sock`; others:
    /// `$XDG_RUNTIME_DIR/appd/appd.sock`, or `/tmp/appd-UID/appd.sock` without a runtime dir.
    public static func resolve(flag: String?) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let env = environment("APPD_SOCKET"), !env.isEmpty { return env }
        return defaultPath()
    }

    public static func defaultPath() -> String {
        if getuid() == 0 { return "/run/appd/appd.sock" }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return "\(runtime)/appd/appd.sock" }
        return "/tmp/appd-\(getuid())/appd.sock"
    }

    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

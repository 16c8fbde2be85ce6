// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// How external plugins are confined: what the operator chose (`pluginSandbox`), the paths
/// hidden from every plugin, the read-only paths every plugin gets, and the uids plugins run
/// as when appd runs as root.
public struct PluginSandbox: Sendable, Equatable {
    public enum Mode: String, Sendable, Equatable {
        /// Each plugin in its own bubblewrap sandbox (the default).
        case bubblewrap
        /// No sandbox: plugins run as appd's user and see what it sees (logged at every start).
        case none
    }

    public var mode: Mode = .bubblewrap
    /// `bwrap`'s path; nil: looked up in `PATH`, then /usr/bin and /usr/local/bin.
    public var bubblewrap: String?
    /// Host paths no plugin may read even though they lie in a tree it sees (`/etc`): files
    /// are replaced by an empty one, directories by an empty one.
    public var hiddenPaths = PluginSandbox.defaultHiddenPaths
    /// Where each plugin's key files are kept, one folder per plugin (`<this>/<plugin>/`); nil:
    /// none. Hidden from every plugin but shown to its own at `/run/credentials`.
    public var credentialsDirectory: String? = "/etc/appd/credentials"
    /// appd's own files: no read-only path may be, contain or lie under one.
    public var protected = ProtectedPaths()
    /// Read-only paths every plugin gets in addition to its manifest's (a shared runtime).
    public var readOnlyPaths: [String] = []
    /// With appd as root, each plugin runs as a uid of its own from this range (like systemd's
    /// `DynamicUser=`), never as root.
    public var uidRange: ClosedRange<UInt32> = 61184...65519

    public static let defaultHiddenPaths = [
        "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private", "/etc/appd", "/etc/credstore",
        "/etc/credstore.encrypted", "/etc/ssh",
    ]

    /// The system trees every sandbox sees read-only (a symbolic link, as on merged-/usr
    /// systems, is recreated as the same link).
    static let systemPaths = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]

    /// Where appd's socket appears inside the sandbox (APPD_SOCKET).
    public static let socketInside = "/run/appd/appd.sock"

    public init() {}

    /// The `bwrap` to use, or why there is none (with how to install it).
    public func locateBubblewrap() -> Result<String, SandboxUnavailable> {
        if let bubblewrap {
            return access(bubblewrap, X_OK) == 0 ? .success(bubblewrap) : .failure(SandboxUnavailable(reason: "\(bubblewrap) (pluginBubblewrap) is not an executable"))
        }
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"] where directory.hasPrefix("/") {
            let candidate = directory + "/bwrap"
            if access(candidate, X_OK) == 0 { return .success(candidate) }
        }
        return .failure(SandboxUnavailable(reason: "bubblewrap (bwrap) is not installed"))
    }
}

/// External plugins cannot be sandboxed here; says how to fix it.
public struct SandboxUnavailable: Error, CustomStringConvertible, Sendable, Equatable {
    public let reason: String
    public var description: String {
        "\(reason): external plugins are not started. Install it (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap), or set pluginSandbox to none to "
            + "run them unconfined as appd's user"
    }
}

// SPDX-License-Identifier: Apache-2.0
import CSystem
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The daemon's listening Unix socket, bound by us or inherited (socket activation).
public final class ListeningSocket: Sendable {
    public let fd: Int32
    public let path: String
    /// The bound file's identity, so shutdown never removes a successor's socket.
    private let identity: (dev: UInt64, ino: UInt64)?
    private let closed = Atomic<Bool>(false)

    private init(fd: Int32, path: String, identity: (dev: UInt64, ino: UInt64)?) {
        self.fd = fd
        self.path = path
        self.identity = identity
    }

    /// Adopts an already listening socket (systemd's LISTEN_FDS); its file is not ours to remove.
    public static func inherited(fd: Int32, path: String) -> ListeningSocket {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        return ListeningSocket(fd: fd, path: path, identity: nil)
    }

    /// Binds `path` with `mode` (and `group`, when set). A stale socket left by a dead daemon
    /// is replaced; a live one is never stolen.
    public static func bind(path: String, mode: mode_t, group: gid_t? = nil, backlog: Int32 = 128) throws(SocketError) -> ListeningSocket {
        let parent = FileSystem.parent(of: path)
        if !parent.isEmpty {
            try FileSystem.makeDirectories(parent, mode: 0o755)
            // A directory another user can write (or owns) lets them put their own listener
            // where clients look for appd's.
            do throws(UnsafeDirectory) {
                try FileSystem.checkPrivate(parent)
            } catch {
                throw SocketError(operation: "check the socket directory", path: parent, code: EPERM, message: error.description)
            }
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw SocketError(
                    operation: "bind", path: path, code: EEXIST,
                    message: "\(path) exists and is not a socket; remove it or choose another --socket")
            }
            let probe = appd_unix_connect(path)
            if probe >= 0 {
                Glibc.close(probe)
                throw SocketError(
                    operation: "bind", path: path, code: EADDRINUSE,
                    message: "another appd is already listening on \(path); stop it first or choose another --socket")
            }
            guard errno == ECONNREFUSED else { throw SocketError(operation: "probe", path: path, code: errno) }
            unlink(path)  // stale: nobody is listening
        }
        // Created owner-only from the first instant (appd_unix_listen; the process umask is
        // never changed: it is shared by every thread); widened to `mode` below.
        let fd = appd_unix_listen(path, backlog)
        guard fd >= 0 else { throw SocketError(operation: "bind", path: path, code: errno) }
        if let group, chown(path, getuid(), group) != 0 {
            let code = errno
            Glibc.close(fd)
            unlink(path)
            throw SocketError(operation: "chown", path: path, code: code)
        }
        guard chmod(path, mode) == 0 else {
            let code = errno
            Glibc.close(fd)
            unlink(path)
            throw SocketError(operation: "chmod", path: path, code: code)
        }
        var bound = stat()
        let identity = lstat(path, &bound) == 0 ? (UInt64(bound.st_dev), UInt64(bound.st_ino)) : nil
        return ListeningSocket(fd: fd, path: path, identity: identity)
    }

    /// Stops listening and removes the socket file if it is still the one we bound.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(fd)
        removePath()
    }

    /// Removes the socket file if it is still this socket's (not one bound there since), so
    /// the path can be bound again at once while this descriptor is closed later.
    public func removePath() {
        guard let identity else { return }
        var info = stat()
        if lstat(path, &info) == 0 && UInt64(info.st_dev) == identity.dev && UInt64(info.st_ino) == identity.ino {
            unlink(path)
        }
    }

}

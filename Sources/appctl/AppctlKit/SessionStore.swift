// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Varlink

/// appctl's saved sessions, one per socket, in `$XDG_CONFIG_HOME/appctl/sessions.json`
/// (`~/.config/appctl/` without it): directory 0700 and checked to be ours, file 0600, written
/// to a new file (never through a link) and renamed into place. Without a home there is no
/// store at all: never one under /tmp, where another user could read or plant it.
struct SessionStore {
    struct Saved: Equatable {
        var accessToken: String
        var refreshToken: String
        var email: String
    }

    /// Where the sessions live; nil when neither XDG_CONFIG_HOME nor HOME is set.
    let path: String?

    static func standard() -> SessionStore {
        if let config = SocketPath.environment("XDG_CONFIG_HOME"), !config.isEmpty { return SessionStore(path: config + "/appctl/sessions.json") }
        guard let home = SocketPath.environment("HOME"), !home.isEmpty else { return SessionStore(path: nil) }
        return SessionStore(path: home + "/.config/appctl/sessions.json")
    }

    private func readAll() -> [String: JSONValue] {
        guard let path, let file = fopen(path, "re") else { return [:] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[0..<n]
            if n < chunk.count || bytes.count > 1 << 20 { break }
        }
        return (try? JSONParser.parse(bytes))?.objectValue ?? [:]
    }

    func session(for socket: String) -> Saved? {
        guard let entry = readAll()[socket], let access = entry["accessToken"]?.stringValue,
            let refresh = entry["refreshToken"]?.stringValue
        else { return nil }
        return Saved(accessToken: access, refreshToken: refresh, email: entry["email"]?.stringValue ?? "")
    }

    func save(_ saved: Saved?, for socket: String) throws(AppctlError) {
        guard let path else {
            throw .usage("HOME and XDG_CONFIG_HOME are unset: appctl has no private place to keep the session; set one of them", command: nil)
        }
        var all = readAll()
        all[socket] = saved.map {
            ["accessToken": .string($0.accessToken), "refreshToken": .string($0.refreshToken), "email": .string($0.email)]
        }
        do throws(SocketError) {
            try FileSystem.makeDirectories(FileSystem.parent(of: path), mode: 0o700)
        } catch {
            throw .usage("cannot create \(error.path) for the session: \(String(cString: strerror(error.code)))", command: nil)
        }
        do throws(UnsafeDirectory) {
            try FileSystem.checkPrivate(FileSystem.parent(of: path), tighten: true)
        } catch {
            throw .usage("not saving the session: \(error)", command: nil)
        }
        // A new file, never an existing one or a link's target.
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .usage("cannot write \(temporary): \(String(cString: strerror(errno)))", command: nil) }
        fchmod(fd, 0o600)
        let written = FileDescriptorWriter.writeAll(fd, JSONWriter.bytes(.object(all)) + [0x0A])
        fsync(fd)
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .usage("cannot save the session to \(path)", command: nil)
        }
    }
}

/// Reads a password: from a TTY without echo, or the first line of stdin.
enum PasswordInput {
    static func read(prompt: String, fromStandardInput: Bool, command: String) throws(AppctlError) -> String {
        if fromStandardInput || isatty(0) == 0 {
            guard fromStandardInput else {
                throw .usage("standard input is not a terminal: pass --password-stdin to read the password from it", command: command)
            }
            let text = String(decoding: readStandardInput(), as: UTF8.self)
            return String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        }
        StandardError.write(prompt)
        var original = termios()
        tcgetattr(0, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(0, TCSAFLUSH, &silent)
        defer {
            tcsetattr(0, TCSAFLUSH, &original)
            StandardError.write("\n")
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(0, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// Before a sandboxed plugin is started under a uid of its own, checks that what it will be
/// shown is really usable by that uid — its folder, the extra read-only paths, its data
/// folder's parents, and the interpreter its executable names (`#!`, through `env` and the
/// PATH it is given) — and says which path is in the way and what to do, instead of the
/// plugin dying with `bwrap: Can't find source path …: Permission denied` or a Python that
/// cannot find its packages.
struct SandboxPathCheck {
    let uid: UInt32
    let gid: UInt32
    /// Host paths the sandbox shows (system paths, read-only paths, the plugin's folder).
    let visible: [String]

    /// The first problem, or nil.
    func problem(folder: String, data: String, readOnly: [String], executable: String, environment: [String]) -> String? {
        for path in readOnly {
            if let blocked = blocking(path, want: R_OK | X_OK) { return "its read-only path \(path) is out of its reach: \(blocked)" }
        }
        if let blocked = blocking(folder, want: R_OK | X_OK) { return "its folder \(folder) is out of its reach: \(blocked)" }
        let parent = String(data[..<(data.lastIndex(of: "/") ?? data.endIndex)])
        if !parent.isEmpty, let blocked = blocking(parent, want: X_OK) { return "its data folder \(data) is out of its reach: \(blocked)" }
        return interpreterProblem(executable, environment: environment)
    }

    /// The interpreter a script names, resolved as the sandbox will (symbolic links followed):
    /// it must lie in what the sandbox shows and be usable by the plugin's uid.
    private func interpreterProblem(_ executable: String, environment: [String]) -> String? {
        guard let line = Self.firstLine(executable), line.hasPrefix("#!") else { return nil }
        let words = line.dropFirst(2).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard var interpreter = words.first else { return nil }
        if interpreter.hasSuffix("/env"), let command = words.dropFirst().first(where: { !$0.hasPrefix("-") }) {
            let path = environment.first { $0.hasPrefix("PATH=") }.map { String($0.dropFirst(5)) } ?? "/usr/local/bin:/usr/bin:/bin"
            // As env will search inside: only the PATH folders the sandbox shows.
            let candidates: [String] = path.split(separator: ":").map(String.init).filter(isVisible).map { $0 + "/" + command }
            guard let found = candidates.first(where: { access($0, X_OK) == 0 }) else {
                return "its interpreter '\(command)' (\(line)) is in none of the PATH folders (\(path)) that the sandbox shows"
            }
            interpreter = found
        }
        guard let real = realpath(interpreter, nil) else { return "its interpreter \(interpreter) does not exist" }
        let resolved = String(cString: real)
        free(real)
        guard isVisible(resolved) else {
            return "its interpreter \(interpreter) is \(resolved), which the sandbox does not show (it shows \(visible.joined(separator: ", "))): "
                + "make a virtualenv with the system's python3 (/usr/bin/python3 -m venv /opt/…), or add the interpreter's folder to readOnlyPaths"
        }
        if let blocked = blocking(resolved, want: X_OK) { return "its interpreter \(resolved) is out of its reach: \(blocked)" }
        return nil
    }

    private func isVisible(_ path: String) -> Bool { visible.contains { path == $0 || path.hasPrefix($0 + "/") } }

    /// Why the plugin's uid cannot use `path` (every directory above it needs search
    /// permission, the path itself `want`), or nil when it can.
    func blocking(_ path: String, want: Int32) -> String? {
        var prefix = ""
        let parts = path.split(separator: "/").map(String.init)
        for (index, part) in parts.enumerated() {
            prefix += "/" + part
            var info = stat()
            guard stat(prefix, &info) == 0 else { return "\(prefix) does not exist" }
            let last = index == parts.count - 1
            let needed = last ? want : X_OK
            if (info.st_mode & S_IFMT) != S_IFDIR && !last { return "\(prefix) is not a directory" }
            if !allows(info, needed) {
                let mode = String(info.st_mode & 0o7777, radix: 8)
                let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
                let fix = last ? "make it readable by others (chmod o+r\(needed & X_OK != 0 ? "x" : ""))" : "move it out from under \(prefix), e.g. to /opt, or chmod o+x \(prefix)"
                return "\(prefix) is \(mode) (owner \(owner)), which the plugin's own uid \(uid) cannot pass: \(fix)"
            }
        }
        return nil
    }

    /// What the owner/group/other bits give the plugin's uid.
    private func allows(_ info: stat, _ want: Int32) -> Bool {
        let bits: mode_t
        if info.st_uid == uid {
            bits = (info.st_mode >> 6) & 7
        } else if info.st_gid == gid {
            bits = (info.st_mode >> 3) & 7
        } else {
            bits = info.st_mode & 7
        }
        if want & R_OK != 0 && bits & 4 == 0 { return false }
        if want & X_OK != 0 && bits & 1 == 0 { return false }
        return true
    }

    /// The first line of a file (at most 256 bytes), or nil.
    static func firstLine(_ path: String) -> String? {
        guard let file = fopen(path, "re") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = fread(&buffer, 1, buffer.count, file)
        guard n > 0 else { return nil }
        let bytes = buffer[0..<n]
        let line = bytes.firstIndex(of: 10).map { bytes[..<$0] } ?? bytes
        return String(decoding: line, as: UTF8.self)
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// Before a sandboxed plugin's program starts, checks that every shared library it names
/// (its ELF `DT_NEEDED` entries) is found where the dynamic loader looks — its `RUNPATH`
/// (`$ORIGIN` resolved), the system's library folders — and lies in what the sandbox shows.
/// A Swift plugin built without `--static-swift-stdlib` needs `libswiftCore.so` from the
/// toolchain, which the sandbox does not show: it would die at once with status 127 and a
/// loader error. This says which library and what to do instead. Scripts and files that are
/// not 64-bit little-endian ELF are not checked (the interpreter check covers scripts).
struct SharedLibraryCheck {
    /// Host paths the sandbox shows.
    let visible: [String]

    /// The first library problem of `executable`, or nil.
    func problem(executable: String) -> String? {
        guard let needs = Self.dynamicNeeds(executable) else { return nil }
        let origin = String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])
        let runpath = needs.runpath.map { $0.replacing("${ORIGIN}", with: origin).replacing("$ORIGIN", with: origin) }
        let folders = runpath + Self.systemFolders()
        for library in needs.libraries {
            guard let found = folders.lazy.map({ $0 + "/" + library }).first(where: { access($0, F_OK) == 0 }) else {
                return "its program needs \(library), which is in none of the folders the loader searches (\(folders.joined(separator: ", "))): "
                    + "install it, or link it in (a Swift plugin: swift build -c release --static-swift-stdlib, docs/plugins.md)"
            }
            let real =
                realpath(found, nil).map { pointer -> String in
                    defer { free(pointer) }
                    return String(cString: pointer)
                } ?? found
            guard visible.contains(where: { real == $0 || real.hasPrefix($0 + "/") }) else {
                let folder = String(real[..<(real.lastIndex(of: "/") ?? real.endIndex)])
                return "its program needs \(library), found at \(real), which the sandbox does not show (it shows \(visible.joined(separator: ", "))): "
                    + "link it in (a Swift plugin: swift build -c release --static-swift-stdlib, docs/plugins.md) or add \(folder) to sandbox.readOnlyPaths"
            }
        }
        return nil
    }

    /// The libraries an ELF file names and its run path; nil when it is not a 64-bit
    /// little-endian ELF with a dynamic section (a script, a static program).
    static func dynamicNeeds(_ path: String) -> (libraries: [String], runpath: [String])? {
        guard let bytes = read(path, limit: 256 << 20), bytes.count >= 64, bytes[0..<4] == [0x7f, 0x45, 0x4c, 0x46], bytes[4] == 2, bytes[5] == 1 else {
            return nil
        }
        func u16(_ at: Int) -> Int { at + 2 <= bytes.count ? Int(bytes[at]) | Int(bytes[at + 1]) << 8 : 0 }
        func u32(_ at: Int) -> Int { at + 4 <= bytes.count ? (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } : 0 }
        func u64(_ at: Int) -> UInt64 { at + 8 <= bytes.count ? (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } : 0 }
        let phoff = Int(clamping: u64(32)), phentsize = u16(54), phnum = u16(56)
        var loads: [(vaddr: UInt64, offset: UInt64, size: UInt64)] = []
        var dynamic: (offset: Int, size: Int)?
        for index in 0..<phnum {
            let header = phoff + index * phentsize
            guard header + 56 <= bytes.count else { return nil }
            switch u32(header) {
            case 1: loads.append((u64(header + 16), u64(header + 8), u64(header + 32)))
            case 2: dynamic = (Int(clamping: u64(header + 8)), Int(clamping: u64(header + 32)))
            default: break
            }
        }
        guard let dynamic else { return nil }
        var needed: [UInt64] = [], runpaths: [UInt64] = [], strtab: UInt64?
        var at = dynamic.offset
        while at + 16 <= min(bytes.count, dynamic.offset + dynamic.size) {
            let tag = u64(at), value = u64(at + 8)
            if tag == 0 { break }
            switch tag {
            case 1: needed.append(value)
            case 5: strtab = value
            case 15, 29: runpaths.append(value)
            default: break
            }
            at += 16
        }
        guard let strtab, let load = loads.first(where: { strtab >= $0.vaddr && strtab < $0.vaddr + $0.size }) else { return nil }
        let base = Int(clamping: load.offset + (strtab - load.vaddr))
        func string(_ offset: UInt64) -> String? {
            let start = base + Int(clamping: offset)
            guard start < bytes.count else { return nil }
            let end = bytes[start...].firstIndex(of: 0) ?? bytes.count
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        return (needed.compactMap(string), runpaths.compactMap(string).flatMap { $0.split(separator: ":").map(String.init) })
    }

    /// Where the loader looks after the run path: /etc/ld.so.conf.d's folders, then the
    /// multiarch and default folders.
    static func systemFolders() -> [String] {
        var folders: [String] = []
        if let directory = opendir("/etc/ld.so.conf.d") {
            defer { closedir(directory) }
            var names: [String] = []
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasSuffix(".conf") { names.append(name) }
            }
            for name in names.sorted() {
                guard let text = read("/etc/ld.so.conf.d/" + name, limit: 64 << 10) else { continue }
                folders += String(decoding: text, as: UTF8.self).split(separator: "\n").map { $0.trimmingCharacters(in: " \t") }.filter { $0.hasPrefix("/") }
            }
        }
        var machine = utsname()
        uname(&machine)
        let arch = withUnsafeBytes(of: machine.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return folders + ["/lib/\(arch)-linux-gnu", "/usr/lib/\(arch)-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    }

    private static func read(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// Key files an operator gives one plugin, as systemd's `LoadCredential=` does: every regular
/// file in `<pluginCredentialsDirectory>/<plugin>/` is opened by appd (which may read it when the
/// plugin's own uid may not) and shown to the plugin read-only at `/run/credentials/<file>`
/// (`CREDENTIALS_DIRECTORY`). The files need not be readable by anyone but appd's user: an APNs
/// `.p8` or an FCM service account stays 0600 (security review 2, finding 12).
struct PluginCredentialFiles {
    /// Where the files appear in the sandbox.
    static let inside = "/run/credentials"
    static let maxFiles = 32
    static let maxBytes = 1 << 20

    /// The opened files (the caller closes the descriptors once the plugin is started).
    private(set) var files: [(name: String, fd: Int32)] = []
    /// The folder they came from.
    let folder: String

    /// Opens the plugin's credential files; none when its folder does not exist. The folder must
    /// be appd's own (or root's) and not writable by others, and hold only regular files with
    /// plain names (links are not followed).
    static func open(_ base: String?, plugin: String) throws(PluginStartError) -> PluginCredentialFiles {
        var opened = PluginCredentialFiles(folder: (base ?? "") + "/" + plugin)
        guard let base, !base.isEmpty else { return opened }
        let folder = opened.folder
        var info = stat()
        guard lstat(folder, &info) == 0 else { return opened }
        if let reason = FileSystem.untrustedReason(directory: folder, allowingStickyRoot: false) {
            throw PluginStartError("its credentials folder \(folder) \(reason); make it appd's (or root's) and not writable by others", permanent: true)
        }
        let directory = Glibc.open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directory >= 0, let listing = fdopendir(directory) else {
            if directory >= 0 { Glibc.close(directory) }
            throw PluginStartError("cannot read its credentials folder \(folder): \(String(cString: strerror(errno)))", permanent: true)
        }
        defer { closedir(listing) }
        do throws(PluginStartError) {
            while let entry = readdir(listing) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name != ".", name != ".." else { continue }
                guard
                    name.utf8.allSatisfy({
                        $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
                    }),
                    !name.hasPrefix(".")
                else { throw PluginStartError("its credential \(folder)/\(name) needs a plain name (letters, digits, '.', '_', '-')", permanent: true) }
                guard opened.files.count < maxFiles else { throw PluginStartError("its credentials folder \(folder) holds more than \(maxFiles) files", permanent: true) }
                let fd = openat(dirfd(listing), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else {
                    throw PluginStartError("cannot open its credential \(folder)/\(name): \(String(cString: strerror(errno))) (links are not followed)", permanent: true)
                }
                var file = stat()
                guard fstat(fd, &file) == 0, file.st_mode & S_IFMT == S_IFREG, file.st_size <= maxBytes else {
                    Glibc.close(fd)
                    throw PluginStartError("its credential \(folder)/\(name) is not a regular file of at most 1 MiB", permanent: true)
                }
                opened.files.append((name, fd))
            }
        } catch {
            opened.close()
            throw error
        }
        opened.files.sort { $0.name < $1.name }
        return opened
    }

    func close() {
        for file in files { _ = Glibc.close(file.fd) }
    }
}

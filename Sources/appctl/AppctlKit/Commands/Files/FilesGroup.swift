// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore

/// `appctl files put|get|ls|rm`: your stored files by hand, over the socket (the bytes go in
/// pieces: `Files.CreateUpload`/`AppendUpload`, `Files.Download`). Any other word goes to the
/// commands derived from `io.appd.Files`.
enum FilesGroup {
    static let group = CommandGroup(
        name: "files", abstract: "Your stored files: put, get, ls, rm.",
        discussion: """
            put uploads a file in pieces, showing progress on a terminal; if it is interrupted, run the same put with --resume and the upload id it printed, and it goes \
            on where the daemon says it stopped (an unfinished upload is deleted after filesUploadHours). get writes a file to --output (default: its name, in the \
            current directory; - for standard output). The daemon checks what a file is from its bytes, as for apps (docs/files.md). Needs 'appctl login'.
            """,
        leaves: [FilesPut.self, FilesGet.self, FilesList.self, FilesRemove.self], derived: true)

    /// Progress on standard error while it is a terminal: `name  42%  4.2 of 10.0 MiB`.
    static func progress(_ name: String, _ done: Int64, _ total: Int64) {
        guard isatty(2) == 1, total > 0 else { return }
        let percent = done * 100 / total
        let line = "\r\(name)  \(percent)%  \(mebibytes(done)) of \(mebibytes(total)) MiB\u{1B}[K"
        StandardError.write(line)
        if done == total { StandardError.write("\n") }
    }

    static func mebibytes(_ bytes: Int64) -> String {
        let tenths = (bytes * 10 + 524_288) / 1_048_576
        return "\(tenths / 10).\(tenths % 10)"
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts

struct FilesGet: Leaf {
    static let path = ["files", "get"]
    static let abstract = "Download a file."
    @Argument("id", "The file's id (from files ls).") var id: String?
    @Option("--output", "path", "Where to write it (default: its name, here; - for standard output).") var output: String?
    @Flag("--force", "Replace a file already at the output path.") var force: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let id else { throw .usage("files get needs a file id", command: Self.command) }
        let file = try context.call(FilesInterface.Get(id: id)).file
        let target = output ?? file.name
        let toStandardOutput = target == "-"
        // Written beside the target, then renamed into place: an interrupted get leaves no half file.
        let partial = target + ".part"
        let fd: Int32
        if toStandardOutput {
            fd = 1
        } else {
            guard force || access(target, F_OK) != 0 else { throw .usage("\(target) exists; --force replaces it, --output writes elsewhere", command: nil) }
            fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
            guard fd >= 0 else { throw .usage("cannot create \(partial): \(String(cString: strerror(errno)))", command: nil) }
        }
        var offset: Int64 = 0
        do throws(AppctlError) {
            repeat {
                let piece = try context.call(FilesInterface.Download(id: file.id, offset: offset))
                guard let bytes = Base64.decode(piece.data), !bytes.isEmpty || piece.total == offset else {
                    throw .usage("the daemon sent a piece that is not base64", command: nil)
                }
                try Self.write(bytes, to: fd, path: toStandardOutput ? "standard output" : partial)
                offset += Int64(bytes.count)
                if !toStandardOutput { FilesGroup.progress(file.name, offset, piece.total) }
                if offset >= piece.total { break }
            } while true
        } catch {
            if !toStandardOutput {
                close(fd)
                unlink(partial)
            }
            throw error
        }
        if !toStandardOutput {
            guard fsync(fd) == 0, close(fd) == 0, rename(partial, target) == 0 else {
                unlink(partial)
                throw .usage("cannot write \(target): \(String(cString: strerror(errno)))", command: nil)
            }
            if context.options.json { print(JSONValue.object(["path": .string(target), "bytes": .int(offset)]).jsonText) } else { print("\(target)  \(offset) bytes") }
        }
        return ExitCode.ok
    }

    private static func write(_ bytes: [UInt8], to fd: Int32, path: String) throws(AppctlError) {
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .usage("cannot write \(path): \(String(cString: strerror(errno)))", command: nil) }
            written += n
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts

struct FilesPut: Leaf {
    static let path = ["files", "put"]
    static let abstract = "Upload a file (resumable: --resume with the id put printed)."
    @Argument("file", "The file to upload.") var file: String?
    @Option("--type", "media-type", "Its type, e.g. image/jpeg (default: from the name's extension).") var type: String?
    @Option("--name", "name", "The name it is stored under (default: the file's own).") var name: String?
    @Option("--resume", "upload-id", "Go on with an interrupted upload of this file.") var resume: String?

    /// Bytes sent a piece: half the most a piece may carry, so a slow link shows progress.
    static let piece = FilesInterface.pieceBytes / 2

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let file else { throw .usage("files put needs a file", command: Self.command) }
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .usage("cannot open \(file): \(String(cString: strerror(errno)))", command: nil) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw .usage("\(file) is not a regular file", command: nil) }
        let size = Int64(info.st_size)
        let shownName = name ?? String(file.split(separator: "/").last ?? Substring(file))
        let declared = type ?? Self.type(ofName: shownName)

        var uploadId: String
        var offset: Int64
        if let resume {
            let status = try context.call(FilesInterface.UploadStatus(uploadId: resume))
            guard status.bytes == size else {
                throw .usage("upload \(resume) is of \(status.bytes) bytes and \(file) has \(size): not the same file", command: nil)
            }
            if let done = status.file { return Self.show(done, context) }
            uploadId = resume
            offset = status.offset
        } else {
            let created = try context.call(FilesInterface.CreateUpload(bytes: size, name: shownName, contentType: declared))
            uploadId = created.uploadId
            offset = 0
            if isatty(2) == 1 { StandardError.write("upload \(uploadId) (if interrupted: appctl files put \(file) --resume \(uploadId))\n") }
        }
        var buffer = [UInt8](repeating: 0, count: Self.piece)
        while true {
            let want = Int(min(Int64(Self.piece), size - offset))
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            guard n == want else { throw .usage("cannot read \(file) at byte \(offset): \(n < 0 ? String(cString: strerror(errno)) : "it got shorter")", command: nil) }
            let reply: FilesInterface.AppendUpload.Reply
            do {
                reply = try context.call(FilesInterface.AppendUpload(uploadId: uploadId, offset: offset, data: Base64.encode(Array(buffer[0..<n]), padded: true)))
            } catch .daemon(let refusal) where refusal.error == "io.appd.Files.OffsetMismatch" {
                // Another put of the same upload moved it: go on from where it is.
                offset = try context.call(FilesInterface.UploadStatus(uploadId: uploadId)).offset
                continue
            }
            offset = reply.offset
            FilesGroup.progress(shownName, offset, size)
            if let done = reply.file { return Self.show(done, context) }
            guard offset < size else { throw .usage("the daemon took every byte and made no file; see appctl files ls", command: nil) }
        }
    }

    static func show(_ file: StoredFile, _ context: Context) -> Int32 {
        if context.options.json, let value = try? JSONValue(encoding: file) {
            print(value.jsonText)
        } else {
            print("\(file.id)  \(file.name.escapingControlCharacters())  \(file.contentType)  \(file.bytes) bytes")
        }
        return ExitCode.ok
    }

    /// The usual type of a name's extension (the daemon checks it against the bytes).
    static func type(ofName name: String) -> String? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "heic": return "image/heic"
        case "heif": return "image/heif"
        case "pdf": return "application/pdf"
        default: return nil
        }
    }
}

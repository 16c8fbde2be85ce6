import BusCore
import Contracts
import Foundation

/// Keeps the session in a file only its owner may read (0600, written to a new file and renamed
/// into place): for command-line tools, servers and Linux. On Apple platforms use
/// `KeychainTokenStore`. A file that cannot be read or parsed is no session (`signedOut`),
/// never a crash; it is removed so the next sign-in starts clean.
public actor FileTokenStore: TokenStore {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() -> Session? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONParser.parse(Array(data)).decode(as: Session.self)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
    }

    public func save(_ session: Session) {
        guard let json = try? JSONValue(encoding: session) else { return }
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = folder + "/." + (path as NSString).lastPathComponent + "." + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: folder.isEmpty ? "." : folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Created 0600 before a byte is written (never through a link), synced, then renamed
        // over the old file: a crash leaves the old session or the new one, whole.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = JSONWriter.bytes(json)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
    }

    public func clear() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

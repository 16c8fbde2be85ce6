// SPDX-License-Identifier: Apache-2.0
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
        // Written whole or not at all (`AtomicFile`): a crash leaves the old session or the new.
        guard let json = try? JSONValue(encoding: session) else { return }
        try? AtomicFile.write(JSONWriter.bytes(json), to: path)
    }

    public func clear() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

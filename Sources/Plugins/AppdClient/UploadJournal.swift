// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where `AppdClient.upload(contentsOf:…)` remembers its unfinished uploads (a JSON file, by
/// default in the caches directory): the upload's URL on the server for each file, so that after
/// the app was killed the same call goes on where the server says the upload is. An entry goes
/// when its upload is done or ended; a stale one is dropped when the server no longer knows it.
public struct UploadJournal: Sendable {
    public let file: URL

    public init(file: URL) { self.file = file }

    /// `appd-uploads.json` in the user's caches directory (the temporary directory without one).
    public static var standard: UploadJournal {
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        return UploadJournal(file: caches.appendingPathComponent("appd-uploads.json"))
    }

    /// Read, changed and written under one lock: two uploads at once keep each other's entries.
    private static let lock = NSLock()

    func entry(_ key: String) -> String? {
        Self.lock.withLock { read()[key] }
    }

    func set(_ key: String, _ path: String?) {
        Self.lock.withLock {
            var all = read()
            all[key] = path
            // Best effort: without the journal an interrupted upload starts again from nothing.
            if let data = try? JSONEncoder().encode(all) { try? data.write(to: file, options: .atomic) }
        }
    }

    private func read() -> [String: String] {
        guard let data = try? Data(contentsOf: file) else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: data)) ?? [:]
    }
}

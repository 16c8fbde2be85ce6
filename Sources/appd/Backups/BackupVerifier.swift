// SPDX-License-Identifier: Apache-2.0
import BusCore
import Storage

/// Checks a backup before anyone relies on it: its manifest, every file's size and SHA-256,
/// nothing missing or extra, the database's integrity, and that what the manifest says of the
/// database (schema versions, last sequence) is what the database holds.
public enum BackupVerifier {
    public static func verify(_ path: String) throws(BackupProblem) -> BackupManifest {
        // The rename is what makes a backup: one still named .partial was never finished, even
        // when a kill came after its last file was written (its contents may check out).
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard !name.hasSuffix(".partial") else {
            throw BackupProblem("\(path) is an unfinished backup (appd renames a backup only when it is complete and synced); make a new one")
        }
        let manifestPath = path + "/" + BackupManifest.fileName
        guard BackupFiles.exists(manifestPath) else {
            throw BackupProblem("\(path) is not a complete backup: it has no \(BackupManifest.fileName) (a backup interrupted before it finished has none)")
        }
        let manifest: BackupManifest
        do {
            guard let bytes = FileSystem.readFile(manifestPath, limit: 16 << 20) else { throw BackupProblem("cannot read it") }
            manifest = try JSONParser.parse(bytes).decode(as: BackupManifest.self)
        } catch {
            throw BackupProblem("\(manifestPath) is not a backup manifest: \(error)")
        }
        guard manifest.format == 1 else { throw BackupProblem("\(path) has format \(manifest.format); this appd reads format 1") }
        let present = Set(BackupFiles.files(under: path)).subtracting([BackupManifest.fileName])
        let listed = Set(manifest.files.map(\.path))
        if let extra = present.subtracting(listed).sorted().first { throw BackupProblem("\(path)/\(extra) is not in the manifest") }
        if let missing = listed.subtracting(present).sorted().first { throw BackupProblem("\(path)/\(missing) is missing") }
        guard listed.contains(BackupManifest.databaseFile) else { throw BackupProblem("\(path) has no \(BackupManifest.databaseFile)") }
        for file in manifest.files {
            let full = path + "/" + file.path
            guard BackupFiles.size(full) == file.bytes else { throw BackupProblem("\(full) has \(BackupFiles.size(full)) bytes; the manifest says \(file.bytes)") }
            guard try BackupFiles.sha256(full) == file.sha256 else { throw BackupProblem("\(full) does not match its SHA-256 in the manifest") }
        }
        let inspection: SQLiteFileInspection
        do { inspection = try SQLiteFileInspection.inspect(path + "/" + BackupManifest.databaseFile) } catch {
            throw BackupProblem("the backup's database cannot be read: \(error)")
        }
        guard inspection.integrity == "ok" else { throw BackupProblem("the backup's database fails its integrity check: \(inspection.integrity)") }
        guard inspection.schemaVersions == manifest.schemaVersions, inspection.lastSequence == manifest.lastSequence else {
            throw BackupProblem("the backup's database does not hold what its manifest says (schema versions or last sequence)")
        }
        return manifest
    }
}

// SPDX-License-Identifier: Apache-2.0
import Backups
import Bus
import Contracts

extension BackupInterface {
    static func install(on dispatcher: VarlinkDispatcher, service: BackupService, backups: Backups) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Create.self) { _, _ in
            do {
                let made = try await service.backUp(scheduled: false)
                return .init(backup: Summary(made.path, made.manifest))
            } catch let problem as BackupProblem {
                throw BackupError.backupFailed(reason: problem.description)
            } catch {
                throw BackupError.backupFailed(reason: "\(error)")
            }
        }
        try bus.register(List.self) { _, _ in .init(directory: backups.directory, backups: backups.list()) }
        try bus.register(Verify.self) { command, _ in
            do {
                let manifest = try BackupVerifier.verify(command.path)
                // verify() throws unless every file matched and integrity_check said ok.
                return .init(backup: Summary(command.path, manifest), files: manifest.files.count, integrity: "ok")
            } catch let problem as BackupProblem {
                throw BackupError.backupFailed(reason: problem.description)
            }
        }
    }
}

extension BackupInterface.Summary {
    init(_ path: String, _ manifest: BackupManifest) {
        self.init(
            path: path, createdAt: manifest.createdAt, appdVersion: manifest.appdVersion, lastSeq: manifest.lastSequence,
            schemaVersions: manifest.schemaVersions, bytes: manifest.files.reduce(0) { $0 + $1.bytes })
    }
}

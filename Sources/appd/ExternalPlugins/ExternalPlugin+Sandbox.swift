// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem

/// How an external plugin is started in its sandbox, and its memory limit kept.
extension ExternalPlugin {
    /// What to run: the plugin itself (no sandbox), or bwrap with the plugin inside, its own
    /// socket to appd open, its data folder its own.
    func prepare(data: String) throws(PluginStartError) -> (plan: PluginProcess.Plan, command: BubblewrapCommand?) {
        var limits = confinement.limits(manifest.sandbox.limits)
        for path in settings.sandbox.readOnlyPaths + manifest.sandbox.readOnlyPaths {
            if let refusal = settings.sandbox.protected.refusal(of: path, folder: discovered.folder) {
                throw PluginStartError("its read-only path \(refusal): remove it from sandbox.readOnlyPaths", permanent: true)
            }
        }
        guard let bubblewrap = try confinement.bubblewrap.get() else {
            // Unconfined, it runs as appd's user and reads its folder where it is (checked all the same).
            let credentials = try PluginCredentialFiles.open(settings.sandbox.credentialsDirectory, plugin: manifest.name)
            credentials.close()
            return (
                PluginProcess.Plan(
                    path: discovered.executable, arguments: [discovered.executable] + manifest.arguments,
                    environment: environment(data: data, socket: settings.controlSocket, credentials: credentials.files.isEmpty ? nil : credentials.folder),
                    setsListenPID: true, directory: discovered.folder, limits: limits, sandboxed: false), nil
            )
        }
        guard let server = settings.server else { throw PluginStartError("appd has no server to give it a socket of its own") }
        // Its program's shared libraries must be in what the sandbox shows (a Swift plugin
        // built without the runtime linked in would exit 127 with a loader error).
        let shown = PluginSandbox.systemPaths + settings.sandbox.readOnlyPaths + manifest.sandbox.readOnlyPaths + [discovered.folder]
        if let problem = SharedLibraryCheck(visible: shown).problem(executable: discovered.executable) {
            throw PluginStartError(problem, permanent: true)
        }
        var uid: UInt32?
        if getuid() == 0 {
            guard let assigned = confinement.uids?.uid(for: manifest.name) else {
                throw PluginStartError("no free uid left in pluginUIDRange \(settings.sandbox.uidRange) for it", permanent: true)
            }
            try PluginUIDs.own(data, uid: assigned)
            uid = assigned
            let readOnly = settings.sandbox.readOnlyPaths + manifest.sandbox.readOnlyPaths
            let check = SandboxPathCheck(uid: assigned, gid: assigned, visible: PluginSandbox.systemPaths + readOnly + [discovered.folder])
            if let problem = check.problem(
                folder: discovered.folder, data: data, readOnly: readOnly, executable: discovered.executable,
                environment: environment(data: data, socket: PluginSandbox.socketInside))
            {
                throw PluginStartError(problem, permanent: true)
            }
            limits.append((appd_rlimit_nproc(), UInt64(manifest.sandbox.limits.processes)))
        }
        door?.close()
        let doorPath = settings.runtimeDirectory + "/" + manifest.name + ".appd.sock"
        do {
            door = try server.openDoor(path: doorPath, scope: manifest.scope, owner: uid)
        } catch {
            throw PluginStartError("cannot create its socket to appd \(doorPath): \(error)")
        }
        let credentials = try PluginCredentialFiles.open(settings.sandbox.credentialsDirectory, plugin: manifest.name)
        let command: BubblewrapCommand
        do {
            command = try BubblewrapCommand(
                bubblewrap: bubblewrap, executable: discovered.executable, arguments: manifest.arguments, folder: discovered.folder, data: data,
                socket: doorPath, readOnly: settings.sandbox.readOnlyPaths + manifest.sandbox.readOnlyPaths, hidden: settings.sandbox.hiddenPaths,
                network: manifest.sandbox.network, tmpBytes: manifest.sandbox.limits.tmpBytes, shmBytes: manifest.sandbox.limits.shmBytes,
                credentials: credentials)
        } catch {
            credentials.close()
            throw error
        }
        let plan = PluginProcess.Plan(
            path: bubblewrap, arguments: command.arguments,
            environment: environment(data: data, socket: PluginSandbox.socketInside, credentials: credentials.files.isEmpty ? nil : PluginCredentialFiles.inside),
            setsListenPID: false, directory: nil, descriptors: command.descriptors, limits: limits, uid: uid, sandboxed: true)
        return (plan, command)
    }

    /// Stops the plugin when its processes together hold more memory than its limit — resident
    /// memory plus what its sandbox's tmpfs mounts hold — or its data folder holds more bytes or
    /// entries than its limits. The folder is walked every round (each `memoryInterval`) while it
    /// holds under `dataWalkEveryRound` entries, else every fifth round (a walk costs about a
    /// microsecond an entry): writers can pass `dataMB` by what they write in one to five
    /// rounds before they are stopped.
    static let dataWalkEveryRound = 10_000

    func watchMemory(_ process: PluginProcess, generation: Int, data: String) async {
        let limits = manifest.sandbox.limits
        let limit = UInt64(limits.memoryMB) << 20, dataLimit = UInt64(limits.dataMB) << 20
        var round = 0
        var lastEntries = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.memoryInterval)
            guard !Task.isCancelled, generation == self.generation, !process.hasExited else { return }
            round += 1
            let used = process.residentBytes() + (confinement.sandboxed ? process.sandboxTmpfsBytes() : 0)
            var reason: String?
            if used > limit {
                reason = "over its memory limit (\(used >> 20) MiB resident and in its /tmp and /dev/shm, sandbox.limits.memoryMB is \(limit >> 20))"
            } else if lastEntries < Self.dataWalkEveryRound || round % 5 == 1 {
                let held = FileSystem.usage(under: data, limit: limits.dataEntries)
                lastEntries = held.entries
                if !held.complete {
                    reason = "over its data limit (more than \(limits.dataEntries) files and folders in \(data), sandbox.limits.dataEntries); remove what it wrote there"
                } else if held.bytes > dataLimit {
                    reason = "over its data limit (\(held.bytes >> 20) MiB in \(data), sandbox.limits.dataMB is \(dataLimit >> 20)); remove what it wrote there"
                }
            }
            guard let reason else { continue }
            attemptError = "killed: " + reason
            lastError = attemptError
            logger.warning("external plugin over a limit; restarting it", metadata: ["plugin": "\(manifest.name)", "reason": "\(reason)"])
            process.signal(SIGKILL)
            return
        }
    }
}

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
        guard let bubblewrap = try confinement.bubblewrap.get() else {
            return (PluginProcess.Plan(
                path: discovered.executable, arguments: [discovered.executable] + manifest.arguments,
                environment: environment(data: data, socket: settings.controlSocket), setsListenPID: true, directory: discovered.folder,
                limits: limits, sandboxed: false), nil)
        }
        guard let server = settings.server else { throw PluginStartError("appd has no server to give it a socket of its own") }
        var uid: UInt32?
        if getuid() == 0 {
            guard let assigned = confinement.uids?.uid(for: manifest.name) else {
                throw PluginStartError("no free uid left in pluginUIDRange \(settings.sandbox.uidRange) for it", permanent: true)
            }
            try PluginUIDs.own(data, uid: assigned)
            uid = assigned
            limits.append((appd_rlimit_nproc(), UInt64(manifest.sandbox.limits.processes)))
        }
        door?.close()
        let doorPath = settings.runtimeDirectory + "/" + manifest.name + ".appd.sock"
        do {
            door = try server.openDoor(path: doorPath, scope: manifest.scope, owner: uid)
        } catch {
            throw PluginStartError("cannot create its socket to appd \(doorPath): \(error)")
        }
        let command = try BubblewrapCommand(
            bubblewrap: bubblewrap, executable: discovered.executable, arguments: manifest.arguments, folder: discovered.folder, data: data,
            socket: doorPath, readOnly: settings.sandbox.readOnlyPaths + manifest.sandbox.readOnlyPaths, hidden: settings.sandbox.hiddenPaths,
            network: manifest.sandbox.network)
        let plan = PluginProcess.Plan(
            path: bubblewrap, arguments: command.arguments, environment: environment(data: data, socket: PluginSandbox.socketInside),
            setsListenPID: false, directory: nil, descriptors: command.descriptors, limits: limits, uid: uid, sandboxed: true)
        return (plan, command)
    }

    /// Stops the plugin when its processes together hold more resident memory than its limit.
    func watchMemory(_ process: PluginProcess, generation: Int) async {
        let limit = UInt64(manifest.sandbox.limits.memoryMB) << 20
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.memoryInterval)
            guard !Task.isCancelled, generation == self.generation, !process.hasExited else { return }
            let resident = process.residentBytes()
            guard resident > limit else { continue }
            attemptError = "killed: over its memory limit (\(resident >> 20) MiB resident, sandbox.limits.memoryMB is \(limit >> 20))"
            lastError = attemptError
            logger.warning("external plugin over its memory limit; restarting it", metadata: ["plugin": "\(manifest.name)", "resident": "\(resident >> 20) MiB"])
            process.signal(SIGKILL)
            return
        }
    }
}

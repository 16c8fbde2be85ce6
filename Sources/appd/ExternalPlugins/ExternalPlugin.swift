// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import CSystem
import Synchronization
import PluginKit

/// Where external plugins live and what they get.
public struct ExternalPluginSettings: Sendable {
    /// Searched in order; the first plugin of a name wins.
    public var directories: [String]
    /// A private (0700) directory for the plugins' sockets.
    public var runtimeDirectory: String
    /// Each plugin gets `<dataDirectory>/<name>` (0700) as APPD_PLUGIN_DATA.
    public var dataDirectory: String
    /// appd's control socket, passed as APPD_SOCKET.
    public var controlSocket: String
    public var startTimeout: Duration = .seconds(10)
    public var healthInterval: Duration = .seconds(10)
    public var healthTimeout: Duration = .seconds(3)
    public var stopTimeout: Duration = .seconds(5)
    public var drainTimeout: Duration = .seconds(10)
    /// A process that ran this long counts as started well (its failure count starts over).
    public var healthyAfter: Duration = .seconds(10)
    /// How often a plugin's resident memory is checked against its limit.
    public var memoryInterval: Duration = .seconds(1)
    /// How plugins are confined (bubblewrap by default).
    public var sandbox = PluginSandbox()
    /// The server that gives each sandboxed plugin a socket of its own (`openDoor`).
    public var server: VarlinkServer?
    /// Where the uids of plugins are kept (appd as root).
    public var uidFile: String
    /// The names and environment variables no manifest may take.
    public var admission = PluginAdmission()

    public init(directories: [String], runtimeDirectory: String, dataDirectory: String, controlSocket: String, server: VarlinkServer? = nil) {
        self.directories = directories
        self.runtimeDirectory = runtimeDirectory
        self.dataDirectory = dataDirectory
        self.controlSocket = controlSocket
        self.server = server
        self.uidFile = dataDirectory + "/uids.json"
    }
}

/// One external plugin under supervision: starts its process, checks what it serves against
/// its manifest, registers its interfaces, health-checks it, restarts it with capped
/// exponential backoff after a crash, and gives up (`failed`) after too many quick failures.
actor ExternalPlugin {
    let discovered: DiscoveredPlugin
    let settings: ExternalPluginSettings
    let registrar: InterfaceRegistrar
    let token: String
    let logger: Logger
    nonisolated let gateway: PluginGateway
    var manifest: ExternalManifest { discovered.manifest }

    /// State, last error, restarts and the restart backoff: the supervision built-in plugins
    /// have too.
    private var supervision: Supervision
    var state: PluginState { supervision.state }
    var lastError: String? {
        get { supervision.lastError }
        set { supervision.lastError = newValue }
    }
    private(set) var interfaces: [String] = []
    private var process: PluginProcess?
    private var pool: PluginConnectionPool?
    var generation = 0
    private var stopping = false
    private var gaveUp = false
    private var startedAt: ContinuousClock.Instant?
    /// Why the current process is being given up on (no GetInfo, a failed health check), to
    /// report with its exit status.
    var attemptError: String?
    private var health: Task<Void, Never>?
    private var pendingRestart: Task<Void, Never>?

    /// How this plugin is confined: bwrap's path (or why there is none), and its uid.
    let confinement: Confinement
    /// appd's socket for it, in a sandbox.
    var door: VarlinkServer.Door?
    /// Where its process is registered, so its connections are its own on any socket.
    let peers: PluginPeers
    private var memoryWatch: Task<Void, Never>?

    init(
        discovered: DiscoveredPlugin, settings: ExternalPluginSettings, confinement: Confinement, registrar: InterfaceRegistrar, token: String,
        peers: PluginPeers, isAdmin: @escaping @Sendable (Caller) -> Bool, logger: Logger
    ) {
        self.peers = peers
        self.discovered = discovered
        self.settings = settings
        self.confinement = confinement
        self.registrar = registrar
        self.token = token
        self.logger = logger
        self.gateway = PluginGateway(
            plugin: discovered.manifest.name, callTimeout: discovered.manifest.callTimeout,
            streamIdleTimeout: discovered.manifest.streamIdleTimeout, isAdmin: isAdmin)
        let restart = discovered.manifest.restart
        self.supervision = Supervision(
            plugin: discovered.manifest.name,
            policy: RestartPolicy(
                initialBackoff: restart.backoff, maxBackoff: restart.maxBackoff, healthyAfter: settings.healthyAfter, maxQuickFailures: restart.maxRetries))
    }

    var status: PluginStatus {
        PluginStatus(
            name: manifest.name, version: manifest.version, state: supervision.reportedState(), lastError: lastError, restarts: supervision.restarts,
            kind: "external",
            pid: process.flatMap { $0.pluginPID }.map { Int($0) }, interfaces: interfaces.isEmpty ? manifest.interfaces : interfaces,
            sandbox: confinement.summary(manifest.sandbox), grants: manifest.grants)
    }

    var socketPath: String { settings.runtimeDirectory + "/" + manifest.name + ".sock" }

    /// Starts the process and waits until it serves what its manifest declares.
    func start() async {
        guard process == nil else { return }
        stopping = false
        gaveUp = false
        attemptError = nil
        supervision.starting()
        generation += 1
        let generation = self.generation
        let name = manifest.name

        do throws(ManifestProblem) {
            try PluginDirectoryScanner.checkSpawnPath(executable: discovered.executable, folder: discovered.folder)
        } catch {
            gaveUp = true
            fail("not started: \(error.description)")
            return
        }
        unlink(socketPath)
        let listenFD = appd_unix_listen(socketPath, 64)
        guard listenFD >= 0 else {
            fail("cannot create its socket \(socketPath): \(String(cString: strerror(errno)))")
            return
        }
        chmod(socketPath, 0o600)
        let pluginData = settings.dataDirectory + "/" + name
        try? FileSystem.makeDirectories(pluginData, mode: 0o700)
        do throws(PluginStartError) {
            let plan = try prepare(data: pluginData)
            let spawned = try await PluginProcess.spawn(name: name, plan: plan.plan, listenFD: listenFD, logger: logger) { [weak self] status in
                // Unstructured: the reaper calls back on its own thread, outside any task: this hops onto the actor.
                Task { await self?.exited(generation: generation, status: status) }
            }
            plan.command?.close()
            // Stopped or restarted while the fork was waiting for the spawner: not wanted now.
            guard generation == self.generation, !stopping else {
                spawned.signal(SIGKILL)
                close(listenFD)
                return
            }
            process = spawned
            peers.started(spawned.pid, scope: manifest.scope)
            // Unstructured: lives as long as this process generation; kept in `memoryWatch`, cancelled when it stops.
            memoryWatch = Task { [weak self] in await self?.watchMemory(spawned, generation: generation, data: pluginData) }
        } catch {
            close(listenFD)
            door?.close()
            door = nil
            if error.permanent { gaveUp = true }
            fail(error.description)
            return
        }
        close(listenFD)
        startedAt = ContinuousClock.now
        let pool = PluginConnectionPool(plugin: name, socketPath: socketPath, workers: manifest.maxConcurrentCalls)
        self.pool = pool

        do {
            let served = try await introspect(pool)
            // It may have exited (and been dealt with) while we waited.
            guard generation == self.generation, !stopping, process != nil else { return }
            try registrar.register(served, manifest: manifest, gateway: gateway)
            interfaces = served.map(\.name)
            gateway.up(pool)
            supervision.running()
            // After a restart the last failure stays shown (why it was restarted) until a
            // manual restart.
            logger.notice(
                "external plugin started",
                metadata: ["plugin": "\(name)", "pid": "\(process.map { $0.pluginPID ?? $0.pid } ?? 0)", "interfaces": "\(interfaces.joined(separator: ","))"])
            // Unstructured: lives as long as this process generation; kept in `health`, cancelled when it stops.
            health = Task { [weak self] in await self?.checkHealth(generation: generation) }
        } catch let problem as ManifestProblem {
            guard generation == self.generation, !stopping, process != nil else { return }
            // What it serves does not match its manifest: a fix is needed, not a restart.
            gaveUp = true
            lastError = problem.description
            logger.error("external plugin refused", metadata: ["plugin": "\(name)", "reason": "\(problem.description)"])
            process?.signal(SIGKILL)
        } catch {
            guard generation == self.generation, !stopping, process != nil else { return }
            // A plugin that exited at once: its own exit status says more than the refused call
            // (in a sandbox, bwrap passes it on a moment later).
            let waitUntil = ContinuousClock.now + .milliseconds(500)
            while let process, !process.hasExited, ContinuousClock.now < waitUntil { try? await Task.sleep(for: .milliseconds(10)) }
            guard generation == self.generation, !stopping, process != nil else { return }
            attemptError = "did not answer GetInfo within \(settings.startTimeout): \(error)"
            lastError = attemptError
            process?.signal(SIGKILL)  // its exit restarts it with backoff
        }
    }

    /// GetInfo and each interface's description, checked against the manifest.
    private func introspect(_ pool: PluginConnectionPool) async throws -> [VarlinkInterface] {
        let info = try await pool.call("org.varlink.service.GetInfo", [:], timeout: settings.startTimeout)
        guard case .array(let names)? = info["interfaces"] else { throw ManifestProblem("its GetInfo reply has no 'interfaces' list") }
        let served = Set(names.compactMap(\.stringValue)).subtracting(["org.varlink.service"])
        guard served == Set(manifest.interfaces) else {
            throw ManifestProblem(
                "it serves \(served.sorted().joined(separator: ", ")) but its manifest declares \(manifest.interfaces.joined(separator: ", "))")
        }
        var interfaces: [VarlinkInterface] = []
        for name in manifest.interfaces {
            let reply = try await pool.call("org.varlink.service.GetInterfaceDescription", ["interface": .string(name)], timeout: settings.startTimeout)
            guard let text = reply["description"]?.stringValue else { throw ManifestProblem("GetInterfaceDescription(\(name)) returned no description") }
            let interface: VarlinkInterface
            do { interface = try VarlinkInterface(parsing: text) } catch { throw ManifestProblem("the IDL of \(name) is not accepted: \(error)") }
            guard interface.name == name else { throw ManifestProblem("GetInterfaceDescription(\(name)) describes \(interface.name)") }
            try InterfaceRegistrar.check(interface, manifest: manifest)
            interfaces.append(interface)
        }
        return interfaces
    }

    /// What to do about a last line a plugin commonly dies with.
    static func hint(for line: String) -> String {
        if line.contains("ModuleNotFoundError") || line.contains("No module named") {
            return " (its Python does not find the package: run it with a virtualenv's python that has it — a #! line naming the venv's python, "
                + "or \"environment\": [\"PATH\", \"VIRTUAL_ENV\"] in plugin.json with appd started from the activated venv)"
        }
        return ""
    }

    private func exited(generation: Int, status: Int32) async {
        guard generation == self.generation else { return }
        // Exited before it ever served: its last words on stderr say why (bwrap's, or its own).
        let lastWords = process?.sandboxError ?? (state == .running ? nil : process?.lastErrorLine.map { "its last output: \($0)" + Self.hint(for: $0) })
        let description = [process?.describe(status) ?? PluginProcess.describe(status), lastWords].compactMap { $0 }.joined(separator: ": ")
        if let process { peers.exited(process.pid) }
        process = nil
        pool?.shutdown()
        pool = nil
        health?.cancel()
        memoryWatch?.cancel()
        door?.close()
        door = nil
        gateway.down(stopping ? "it is stopped" : "it \(description); restarting")
        if stopping {
            supervision.stopped()
            return
        }
        if gaveUp {
            supervision.refused(lastError ?? description)
            gateway.down("it was refused: \(lastError ?? description)")
            return
        }
        // This attempt's reason with its exit status (not every earlier attempt's).
        let reason = [attemptError, description].compactMap { $0 }.joined(separator: "; ")
        logger.warning("external plugin stopped unexpectedly", metadata: ["plugin": "\(manifest.name)", "status": "\(description)"])
        if manifest.restart.policy == "never" || (manifest.restart.policy == "on-failure" && PluginProcess.exitedCleanly(status)) {
            if PluginProcess.exitedCleanly(status) {
                supervision.stopped()
                lastError = reason
            } else {
                supervision.refused(reason)
            }
            gateway.down("it \(description)")
            return
        }
        switch supervision.failed(reason, ranFor: startedAt.map { ContinuousClock.now - $0 }) {
        case .giveUp:
            gateway.down("it failed: \(description)")
            logger.error("external plugin failed; not restarting it", metadata: ["plugin": "\(manifest.name)"])
        case .restart(let delay):
            // Unstructured: a restart after a back-off must not hold the exit handler; kept in `pendingRestart`, cancelled by stop.
            pendingRestart = Task { [weak self] in
                try? await Task.sleep(for: delay)
                await self?.restartAfterFailure(generation: generation)
            }
        }
    }

    private func restartAfterFailure(generation: Int) async {
        guard generation == self.generation, !stopping, process == nil else { return }
        supervision.restarting(manual: false)
        await start()
    }

    private func checkHealth(generation: Int) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.healthInterval)
            guard !Task.isCancelled, generation == self.generation, state == .running, let pool else { return }
            do {
                _ = try await pool.call("org.varlink.service.GetInfo", [:], timeout: settings.healthTimeout)
            } catch {
                guard generation == self.generation, state == .running else { return }
                attemptError = "health check failed: \(error)"
                lastError = attemptError
                logger.warning("external plugin failed its health check; restarting it", metadata: ["plugin": "\(manifest.name)", "error": "\(error)"])
                process?.signal(SIGKILL)
                return
            }
        }
    }

    /// Lets calls in flight finish (bounded), then stops the process (SIGTERM, then SIGKILL).
    func stop() async {
        stopping = true
        pendingRestart?.cancel()
        health?.cancel()
        memoryWatch?.cancel()
        gateway.down("it is stopping")
        if let pool {
            let drainUntil = ContinuousClock.now + settings.drainTimeout
            while pool.inFlight > 0 && ContinuousClock.now < drainUntil { try? await Task.sleep(for: .milliseconds(10)) }
        }
        if let process {
            process.signal(SIGTERM)
            let killAt = ContinuousClock.now + settings.stopTimeout
            while !process.hasExited && ContinuousClock.now < killAt { try? await Task.sleep(for: .milliseconds(10)) }
            process.signal(SIGKILL)
            while !process.hasExited { try? await Task.sleep(for: .milliseconds(5)) }
            // In a sandbox the plugin is bwrap's grandchild: the kernel takes it down with the
            // sandbox a moment after bwrap is gone. Stopped means the plugin is gone too.
            let goneBy = ContinuousClock.now + .seconds(2)
            while process.pluginIsRunning && ContinuousClock.now < goneBy { try? await Task.sleep(for: .milliseconds(5)) }
        }
        // The exit callback may not have run yet; settle the state here either way.
        generation += 1
        if let process { peers.exited(process.pid) }
        process = nil
        pool?.shutdown()
        pool = nil
        supervision.stopped()
        gateway.down("it is stopped")
        unlink(socketPath)
        door?.close()
        door = nil
    }

    /// A manual restart (appctl plugins restart): drains, stops, starts, failure count reset.
    func restart() async {
        await stop()
        supervision.restarting(manual: true)
        await start()
    }

    /// Removed or disabled: stop, and stop serving its interfaces.
    func remove() async {
        await stop()
        for name in interfaces { registrar.unregister(name, plugin: manifest.name) }
        interfaces = []
    }

    private func fail(_ reason: String) {
        supervision.refused(reason)
        gateway.down(reason)
        logger.error("external plugin could not start", metadata: ["plugin": "\(manifest.name)", "reason": "\(reason)"])
    }

    /// The allow-listed part of appd's environment and what the plugin needs to find appd.
    /// `credentials`: where its key files are (`CREDENTIALS_DIRECTORY`, as systemd names it).
    func environment(data: String, socket: String, credentials: String? = nil) -> [String] {
        var env: [String] = []
        var hasPath = false
        for name in manifest.environment {
            guard let value = getenv(name) else { continue }
            if name == "PATH" { hasPath = true }
            env.append("\(name)=\(String(cString: value))")
        }
        if !hasPath { env.append("PATH=/usr/local/bin:/usr/bin:/bin") }
        env += [
            "LISTEN_FDS=1", "LISTEN_FDNAMES=varlink", "APPD_SOCKET=\(socket)", "APPD_PLUGIN_NAME=\(manifest.name)",
            "APPD_PLUGIN_TOKEN=\(token)", "APPD_PLUGIN_DATA=\(data)",
        ]
        if let credentials { env.append("CREDENTIALS_DIRECTORY=\(credentials)") }
        return env
    }
}

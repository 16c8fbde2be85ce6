// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus
import Contracts
import Crypto
import Synchronization
import PluginKit

/// The external plugins: discovery, start and stop, rescan, restart/enable/disable, their
/// credentials, and their statuses for `appctl plugins`. A plugin's crash never takes appd down.
public actor ExternalPluginHost {
    let settings: ExternalPluginSettings
    let registrar: InterfaceRegistrar
    let isAdmin: @Sendable (Caller) -> Bool
    let logger: Logger
    /// Names disabled with `appctl plugins disable`, kept across restarts of appd.
    let stateFile: String
    public nonisolated let credentials = PluginCredentialStore()
    /// The processes it started, by plugin: a connection from one is that plugin's.
    public nonisolated let peers = PluginPeers()
    private var plugins: [String: ExternalPlugin] = [:]
    private var order: [String] = []
    private var problems: [PluginProblem] = []
    private let topics: EventTopics
    private var disabled: Set<String> = []
    /// bwrap (or why not) and the plugins' uids, settled at the first start.
    private var confinement: Confinement?

    public init(
        settings: ExternalPluginSettings, topics: EventTopics, dispatcher: VarlinkDispatcher, stateFile: String, isAdmin: @escaping @Sendable (Caller) -> Bool, logger: Logger
    ) {
        self.settings = settings
        self.registrar = InterfaceRegistrar(dispatcher: dispatcher)
        self.topics = topics
        self.stateFile = stateFile
        self.isAdmin = isAdmin
        self.logger = logger
    }

    /// Whether the app-facing HTTP API may route `method`: nil when no external plugin serves
    /// its interface, else whether the plugin's manifest lists it under "http".
    public nonisolated func httpExposed(_ method: String) -> Bool? { registrar.owners.httpExposed(method) }

    /// Discovers and starts every enabled plugin (in parallel).
    public func startAll() async {
        let confinement = Confinement(settings: settings)
        self.confinement = confinement
        // Plugins with uids of their own must pass through to their sockets and data folders
        // (each of which is theirs alone); nobody else may list them.
        let mode: mode_t = confinement.sandboxed && confinement.uids != nil ? 0o711 : 0o700
        for directory in [settings.runtimeDirectory, settings.dataDirectory] {
            try? FileSystem.makeDirectories(directory, mode: mode)
            chmod(directory, mode)
        }
        disabled = loadDisabled()
        switch confinement.bubblewrap {
        case .success(nil):
            logger.warning(
                "external plugins run WITHOUT a sandbox (pluginSandbox: none): each can read and write what appd's user can, appd's database included"
                    + (getuid() == 0 ? ", and runs as root" : ""))
        case .failure(let problem): logger.error("\(problem.description)")
        case .success: break
        }
        _ = await rescan()
    }

    /// What a rescan found: the plugins added, removed and changed, the directories it read,
    /// and the folders it skipped with the reason.
    public struct Rescan: Sendable {
        public var added: [String] = []
        public var removed: [String] = []
        public var changed: [String] = []
        /// Each plugin directory, whether it exists, and how many plugin folders it holds.
        public var directories: [(path: String, exists: Bool, folders: Int)] = []
        public var skipped: [PluginProblem] = []
    }

    /// Picks up new plugin folders, drops removed ones, and restarts plugins whose manifest or
    /// folder changed.
    @discardableResult
    public func rescan() async -> Rescan {
        let (found, problems) = PluginDirectoryScanner.scan(settings.directories)
        self.problems = problems
        for problem in problems { logger.warning("plugin folder skipped", metadata: ["folder": "\(problem.folder)", "reason": "\(problem.reason)"]) }
        var added: [String] = [], removed: [String] = [], changed: [String] = []
        for name in order {
            guard let plugin = plugins[name] else { continue }
            let now = found.first { $0.manifest.name == name }
            if let now, now == plugin.discovered { continue }
            // Gone, or changed: stop it and stop serving its interfaces (a changed one is then
            // started again below with its new manifest).
            await plugin.remove()
            credentials.remove(plugin: name)
            topics.unregister(external: name)
            plugins[name] = nil
            if now == nil { removed.append(name) } else { changed.append(name) }
        }
        order.removeAll { plugins[$0] == nil }
        var starting: [ExternalPlugin] = []
        for discovered in found where plugins[discovered.manifest.name] == nil {
            let name = discovered.manifest.name
            // A built-in plugin's name is not an external plugin's to take (topics, credentials
            // and statuses are keyed by it), nor are appd's secrets.
            if let reason = settings.admission.refusal(of: discovered.manifest) {
                self.problems.append(PluginProblem(folder: discovered.folder, reason: reason))
                logger.warning("plugin refused", metadata: ["plugin": name, "folder": "\(discovered.folder)", "reason": "\(reason)"])
                continue
            }
            // Its declared event types own their topics, all or none; one another plugin owns
            // (or under a built-in's prefix) is refused, and nothing was registered to undo.
            do {
                try topics.register(try discovered.manifest.topics())
            } catch {
                self.problems.append(PluginProblem(folder: discovered.folder, reason: "its events were refused: \(error)"))
                logger.warning("plugin skipped: its events were refused", metadata: ["plugin": name, "error": "\(error)"])
                continue
            }
            let token = (try? SecretToken.generate()) ?? ""
            guard !token.isEmpty else { continue }
            credentials.set(token: token, scope: discovered.manifest.scope)
            let confinement = self.confinement ?? Confinement(settings: settings)
            self.confinement = confinement
            let plugin = ExternalPlugin(
                discovered: discovered, settings: settings, confinement: confinement, registrar: registrar, token: token, peers: peers,
                isAdmin: isAdmin, logger: logger)
            plugins[name] = plugin
            order.append(name)
            if !changed.contains(name) { added.append(name) }
            if discovered.manifest.enabled && !disabled.contains(name) { starting.append(plugin) }
        }
        await withTaskGroup(of: Void.self) { group in
            for plugin in starting { group.addTask { await plugin.start() } }
        }
        var outcome = Rescan(added: added, removed: removed, changed: changed, skipped: problems)
        outcome.directories = settings.directories.map { directory in
            let folders =
                found.filter { FileSystem.parent(of: $0.folder) == directory }.count
                + problems.filter { FileSystem.parent(of: $0.folder) == directory }.count
            return (directory, PluginDirectoryScanner.isDirectory(directory), folders)
        }
        return outcome
    }

    public func stopAll() async {
        await withTaskGroup(of: Void.self) { group in
            for plugin in plugins.values { group.addTask { await plugin.stop() } }
        }
    }

    public func restart(_ name: String) async throws(DaemonError) {
        let plugin = try find(name)
        guard !disabled.contains(name) else { throw .pluginDisabled(name: name) }
        await plugin.restart()
    }

    public func enable(_ name: String) async throws(DaemonError) {
        let plugin = try find(name)
        disabled.remove(name)
        saveDisabled()
        let state = await plugin.state
        if state == .stopped || state == .failed { await plugin.restart() }
    }

    public func disable(_ name: String) async throws(DaemonError) {
        let plugin = try find(name)
        disabled.insert(name)
        saveDisabled()
        await plugin.stop()
    }

    private func find(_ name: String) throws(DaemonError) -> ExternalPlugin {
        guard let plugin = plugins[name] else { throw .unknownPlugin(name: name) }
        return plugin
    }

    /// One external plugin's part of a user's data export: the method to call while it runs,
    /// or why it cannot contribute now (disabled, failed, stopped).
    public struct Exporter: Sendable {
        public let plugin: String
        public let method: String
        public let unavailable: String?
    }

    /// The plugins whose manifest declares an `export` method, in start order.
    public func exporters() async -> [Exporter] {
        var out: [Exporter] = []
        for name in order {
            guard let plugin = plugins[name], let method = plugin.discovered.manifest.export else { continue }
            let status = await plugin.status
            let running = status.state == .running || status.state == .degraded
            let why = disabled.contains(name) ? "disabled" : "\(status.state.rawValue)\(status.lastError.map { ": \($0)" } ?? "")"
            out.append(Exporter(plugin: name, method: method, unavailable: running ? nil : why))
        }
        return out
    }

    /// Every external plugin's state, then each skipped folder as `failed` with the reason.
    public func statuses() async -> [PluginStatus] {
        var out: [PluginStatus] = []
        for name in order {
            guard var status = await plugins[name]?.status else { continue }
            if disabled.contains(name) && status.state == .stopped { status.lastError = "disabled (appctl plugins enable \(name))" }
            out.append(status)
        }
        for problem in problems {
            let folder = problem.folder.split(separator: "/").last.map(String.init) ?? problem.folder
            out.append(PluginStatus(name: folder, version: "-", state: .failed, lastError: "\(problem.folder): \(problem.reason)", kind: "external"))
        }
        return out
    }

    private func loadDisabled() -> Set<String> {
        guard let bytes = PluginDirectoryScanner.readFile(stateFile, limit: 1 << 20), let json = try? JSONParser.parse(bytes),
            case .array(let names)? = json["disabled"]
        else { return [] }
        return Set(names.compactMap(\.stringValue))
    }

    private func saveDisabled() {
        let bytes = JSONWriter.bytes(["disabled": .array(disabled.sorted().map(JSONValue.string))])
        let temporary = stateFile + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            logger.error("cannot save the disabled plugins", metadata: ["file": "\(stateFile)", "error": "\(String(cString: strerror(errno)))"])
            return
        }
        FileDescriptorWriter.writeAll(fd, bytes)
        fsync(fd)
        close(fd)
        rename(temporary, stateFile)
    }
}

/// The plugins' credentials: only their SHA-256 digests are kept.
public final class PluginCredentialStore: PluginCredentials {
    private let scopes = Mutex<[String: PluginScope]>([:])

    func set(token: String, scope: PluginScope) {
        scopes.withLock { table in
            table = table.filter { $0.value.plugin != scope.plugin }
            table[SecretToken.digest(token)] = scope
        }
    }

    func remove(plugin: String) {
        scopes.withLock { $0 = $0.filter { $0.value.plugin != plugin } }
    }

    public func scope(forToken token: String) -> PluginScope? {
        scopes.withLock { $0[SecretToken.digest(token)] }
    }
}

/// Runs the external plugins as one of appd's services: starts them, and stops them all when
/// appd shuts down.
public struct ExternalPluginService: Service {
    public let host: ExternalPluginHost
    public init(host: ExternalPluginHost) { self.host = host }
    public var name: String { "external-plugins" }

    public func run() async throws {
        await host.startAll()
        await gracefulShutdown()
        await host.stopAll()
    }
}

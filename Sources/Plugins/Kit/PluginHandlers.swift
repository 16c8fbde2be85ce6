import Bus
import Synchronization

/// The handlers a plugin declares while it starts. The host, not the plugin, puts them on the
/// bus: after `start` returns it checks them against the plugin's interface (every method of
/// the IDL handled, nothing handled that the IDL does not declare), installs them, serves the
/// interface, and at stop removes exactly what it installed.
public final class PluginHandlers: Sendable {
    struct Declared: Sendable {
        let method: String
        /// An in-process command (in no IDL, so no client can call it): exempt from the check.
        let inProcess: Bool
        let install: @Sendable (EventBus) throws(DuplicateHandler) -> Void
    }

    private let declared = Mutex<[Declared]>([])

    public init() {}

    /// Declares the handler of a command of the plugin's interface.
    public func handle<C: Command>(_ type: C.Type, handler: @escaping @Sendable (C, Envelope) async throws -> C.Reply) {
        add(Declared(method: C.method, inProcess: false) { bus throws(DuplicateHandler) in try bus.register(C.self, handler: handler) })
    }

    /// Declares the handler of a streaming command; `requirements` replaces the type's own when
    /// the configuration decides them.
    public func handle<C: StreamingCommand>(
        _ type: C.Type, requirements: [Requirement]? = nil, handler: @escaping @Sendable (C, Envelope, ReplyWriter<C.Reply>) async throws -> C.Reply
    ) {
        add(Declared(method: C.method, inProcess: false) { bus throws(DuplicateHandler) in try bus.register(C.self, requirements: requirements, handler: handler) })
    }

    /// Declares a command only other plugins call, on the bus: it is in no IDL, so no client
    /// can reach it. It must still be named under the plugin's interface.
    public func handleInProcess<C: Command>(_ type: C.Type, handler: @escaping @Sendable (C, Envelope) async throws -> C.Reply) {
        add(Declared(method: C.method, inProcess: true) { bus throws(DuplicateHandler) in try bus.register(C.self, handler: handler) })
    }

    /// Every declared method, in declaration order.
    public var methods: [String] { declared.withLock { $0.map(\.method) } }

    var all: [Declared] { declared.withLock { $0 } }

    private func add(_ entry: Declared) { declared.withLock { $0.append(entry) } }

    /// Checks the handlers against `interface` and installs them on `bus` (all or none).
    public func activate(on bus: EventBus, interface: VarlinkInterface?, plugin: String) throws {
        try check(against: interface, plugin: plugin)
        var installed: [String] = []
        do {
            for entry in all {
                try entry.install(bus)
                installed.append(entry.method)
            }
        } catch {
            for method in installed { bus.unregister(method: method) }
            throw error
        }
    }

    /// Removes every handler `activate` installed.
    public func deactivate(on bus: EventBus) {
        for method in methods { bus.unregister(method: method) }
    }

    /// Checks the declared handlers against `interface`, the plugin's IDL: each IDL method has
    /// exactly one handler and each handler an IDL method (in-process commands: a name under
    /// the interface). Throws the first mismatch, naming the method.
    func check(against interface: VarlinkInterface?, plugin: String) throws(PluginInterfaceMismatch) {
        let entries = all
        var seen: Set<String> = []
        for entry in entries where !seen.insert(entry.method).inserted {
            throw PluginInterfaceMismatch(plugin: plugin, method: entry.method, problem: .handledTwice)
        }
        guard let interface else {
            if let first = entries.first { throw PluginInterfaceMismatch(plugin: plugin, method: first.method, problem: .noInterface) }
            return
        }
        let declared = Set(interface.methods.map { interface.name + "." + $0.name })
        for entry in entries {
            let underInterface = entry.method.hasPrefix(interface.name + ".") && !entry.method.dropFirst(interface.name.count + 1).contains(".")
            if entry.inProcess {
                if !underInterface || declared.contains(entry.method) {
                    throw PluginInterfaceMismatch(plugin: plugin, method: entry.method, problem: .inProcessOutsideInterface(interface.name))
                }
            } else if !declared.contains(entry.method) {
                throw PluginInterfaceMismatch(plugin: plugin, method: entry.method, problem: .notInInterface(interface.name))
            }
        }
        if let missing = declared.sorted().first(where: { !seen.contains($0) }) {
            throw PluginInterfaceMismatch(plugin: plugin, method: missing, problem: .unhandled)
        }
    }
}

/// A plugin's handlers and its interface do not match: the plugin does not start.
public struct PluginInterfaceMismatch: Error, Equatable, CustomStringConvertible {
    public enum Problem: Equatable, Sendable {
        /// The IDL declares the method; the plugin declared no handler for it.
        case unhandled
        /// The plugin handles a method its IDL (named here) does not declare.
        case notInInterface(String)
        /// An in-process command not named under the interface, or named like one of its methods.
        case inProcessOutsideInterface(String)
        /// Two handlers for one method.
        case handledTwice
        /// Handlers, but no interface in the manifest.
        case noInterface
    }

    public let plugin: String
    public let method: String
    public let problem: Problem

    public var description: String {
        switch problem {
        case .unhandled: "plugin '\(plugin)' declares \(method) in its interface but registers no handler for it"
        case .notInInterface(let name): "plugin '\(plugin)' handles \(method), which its interface \(name) does not declare; add it to the IDL or drop the handler"
        case .inProcessOutsideInterface(let name):
            "plugin '\(plugin)' handles the in-process command \(method): name it under \(name) and keep it out of the IDL"
        case .handledTwice: "plugin '\(plugin)' registers two handlers for \(method)"
        case .noInterface: "plugin '\(plugin)' handles \(method) but its manifest names no interface"
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The handlers a plugin declares, checked against its interfaces before any is installed:
/// every method of the IDLs handled, nothing handled that they do not declare, no method
/// handled twice. appd's plugin host does this for a built-in plugin (installs them after
/// `start`, removes them at stop); the plugin SDK does it for a Swift external plugin.
public final class HandlerSet: Sendable {
    struct Declared: Sendable {
        let method: String
        /// An in-process command (in no IDL, so no client can call it): exempt from the check.
        let inProcess: Bool
        let install: @Sendable (CommandBus) throws(DuplicateHandler) -> Void
    }

    private let declared = Mutex<[Declared]>([])

    public init() {}

    /// Declares the handler of a command of the plugin's interface.
    public func handle<C: Command>(_ type: C.Type, handler: @escaping @Sendable (C, Envelope) async throws -> C.Reply) {
        add(Declared(method: C.method, inProcess: false) { bus throws(DuplicateHandler) in try bus.register(C.self, handler: handler) })
    }

    /// Declares the handler of a command that never waits (see `CommandBus.answer(_:handler:)`).
    public func answer<C: Command>(_ type: C.Type, handler: @escaping @Sendable (C, Envelope) throws -> C.Reply) {
        add(Declared(method: C.method, inProcess: false) { bus throws(DuplicateHandler) in try bus.answer(C.self, handler: handler) })
    }

    /// Declares the handler of a command that usually answers without waiting (see
    /// `CommandBus.answer(_:now:later:)`).
    public func answer<C: Command>(
        _ type: C.Type, now: @escaping @Sendable (C, Envelope) throws -> C.Reply?, later: @escaping @Sendable (C, Envelope) async throws -> C.Reply
    ) {
        add(Declared(method: C.method, inProcess: false) { bus throws(DuplicateHandler) in try bus.answer(C.self, now: now, later: later) })
    }

    /// Declares the handler of a streaming command; `requirements` replaces the type's own when
    /// the configuration decides them.
    public func handle<C: StreamingCommand>(
        _ type: C.Type, requirements: [Requirement]? = nil, handler: @escaping @Sendable (C, Envelope, ReplyWriter<C.Reply>) async throws -> C.Reply
    ) {
        add(Declared(method: C.method, inProcess: false) { bus throws(DuplicateHandler) in try bus.register(C.self, requirements: requirements, handler: handler) })
    }

    /// Declares a JSON handler for a method known only by name (a proxy, a generated interface).
    public func handleRaw(method: String, requirements: [Requirement] = [], handler: @escaping @Sendable (Envelope, JSONValue) async throws -> JSONValue) {
        add(
            Declared(method: method, inProcess: false) { bus throws(DuplicateHandler) in
                try bus.registerRaw(method: method, requirements: requirements, handler: handler)
            })
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
    public func activate(on bus: CommandBus, interface: VarlinkInterface?, plugin: String) throws {
        try activate(on: bus, interfaces: interface.map { [$0] } ?? [], plugin: plugin)
    }

    /// Checks the handlers against `interfaces` and installs them on `bus` (all or none).
    public func activate(on bus: CommandBus, interfaces: [VarlinkInterface], plugin: String) throws {
        try check(against: interfaces, plugin: plugin)
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
    public func deactivate(on bus: CommandBus) {
        for method in methods { bus.unregister(method: method) }
    }

    /// Checks the declared handlers against `interfaces`, the plugin's IDLs: each IDL method
    /// has exactly one handler and each handler an IDL method (in-process commands: a name
    /// under one of the interfaces). Throws the first mismatch, naming the method.
    public func check(against interfaces: [VarlinkInterface], plugin: String) throws(InterfaceMismatch) {
        let entries = all
        var seen: Set<String> = []
        for entry in entries where !seen.insert(entry.method).inserted {
            throw InterfaceMismatch(plugin: plugin, method: entry.method, problem: .handledTwice)
        }
        guard !interfaces.isEmpty else {
            if let first = entries.first { throw InterfaceMismatch(plugin: plugin, method: first.method, problem: .noInterface) }
            return
        }
        let names = interfaces.map(\.name)
        let declared = Set(interfaces.flatMap { interface in interface.methods.map { interface.name + "." + $0.name } })
        for entry in entries {
            let owner = names.first { entry.method.hasPrefix($0 + ".") && !entry.method.dropFirst($0.count + 1).contains(".") }
            if entry.inProcess {
                if owner == nil || declared.contains(entry.method) {
                    throw InterfaceMismatch(plugin: plugin, method: entry.method, problem: .inProcessOutsideInterface(names.joined(separator: ", ")))
                }
            } else if !declared.contains(entry.method) {
                throw InterfaceMismatch(plugin: plugin, method: entry.method, problem: .notInInterface(owner ?? names.joined(separator: ", ")))
            }
        }
        if let missing = declared.sorted().first(where: { !seen.contains($0) }) {
            throw InterfaceMismatch(plugin: plugin, method: missing, problem: .unhandled)
        }
    }
}

/// A plugin's handlers and its interfaces do not match: the plugin does not start.
public struct InterfaceMismatch: Error, Equatable, CustomStringConvertible {
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

    public init(plugin: String, method: String, problem: Problem) {
        self.plugin = plugin
        self.method = method
        self.problem = problem
    }

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

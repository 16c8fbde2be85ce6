// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// Serves external plugins' interfaces: each on the varlink dispatcher (so clients, appctl and
/// introspection see it) and each method on the bus with the manifest's requirements (so the
/// same gates apply as to built-in plugins).
struct InterfaceRegistrar: Sendable {
    let dispatcher: VarlinkDispatcher
    /// Which plugin serves each interface; shared by every copy of the registrar.
    let owners = InterfaceOwners()

    /// Checks an interface against the manifest: requirements name real methods, and a
    /// `caller` input field is `?Caller` with the documented shape.
    static func check(_ interface: VarlinkInterface, manifest: ExternalManifest) throws(ManifestProblem) {
        for method in manifest.requirements.keys where method.hasPrefix(interface.name + ".") {
            let short = String(method.dropFirst(interface.name.count + 1))
            guard interface.method(short) != nil else { throw ManifestProblem("requirements: \(interface.name) has no method \(short)") }
        }
        for method in interface.methods {
            guard let field = method.input.first(where: { $0.name == "caller" }) else { continue }
            guard field.type == .optional(.named("Caller")) else {
                throw ManifestProblem("\(interface.name).\(method.name): declare the field as 'caller: ?Caller' (appd fills it in)")
            }
            let expected: [VarlinkField] = [
                VarlinkField(name: "uid", type: .int), VarlinkField(name: "userId", type: .optional(.string)),
                VarlinkField(name: "email", type: .optional(.string)), VarlinkField(name: "roles", type: .array(.string)),
            ]
            guard case .structure(let fields)? = interface.type("Caller")?.type,
                fields.map({ [$0.name, $0.type.description] }) == expected.map({ [$0.name, $0.type.description] })
            else {
                throw ManifestProblem("\(interface.name): define 'type Caller (uid: int, userId: ?string, email: ?string, roles: []string)'")
            }
        }
    }

    /// Serves the interfaces (replacing an earlier registration of the same plugin). An
    /// interface another plugin serves is refused: a second plugin must never take over the
    /// first's methods or drop their requirements.
    func register(_ interfaces: [VarlinkInterface], manifest: ExternalManifest, gateway: PluginGateway) throws {
        if let (name, owner) = owners.claim(interfaces.map(\.name), for: manifest.name, http: manifest.http) {
            throw ManifestProblem("\(name) is already served by plugin '\(owner)'; only one plugin may serve an interface")
        }
        for interface in interfaces {
            if let existing = dispatcher.interface(interface.name), existing.text != interface.text { unregister(interface.name, plugin: manifest.name) }
            if dispatcher.interface(interface.name) == nil {
                do {
                    try dispatcher.register(interface)
                } catch {
                    throw ManifestProblem("\(interface.name) is already served by another plugin")
                }
            }
            for method in interface.methods {
                let full = "\(interface.name).\(method.name)"
                let injects = method.input.contains { $0.name == "caller" }
                dispatcher.bus.unregister(method: full)
                // Plain calls get one reply; calls with `more` are streamed through from the plugin.
                try dispatcher.bus.registerRaw(
                    method: full, requirements: manifest.requirements(of: full),
                    single: { envelope, parameters in try await gateway.call(full, parameters, envelope, injectsCaller: injects) },
                    stream: { envelope, parameters, writer in
                        try await gateway.stream(full, parameters, envelope, injectsCaller: injects, writer: writer)
                    })
            }
        }
    }

    /// Stops serving `interface`, if `plugin` is the one serving it.
    func unregister(_ interface: String, plugin: String) {
        guard owners.release(interface, by: plugin) else { return }
        dispatcher.unregister(interface: interface)
        dispatcher.bus.unregister(interface: interface)
    }
}

/// Interface name → the external plugin serving it.
final class InterfaceOwners: Sendable {
    private let owners = Mutex<[String: String]>([:])
    /// The methods each interface's manifest marks for the HTTP API.
    private let http = Mutex<[String: Set<String>]>([:])

    /// Whether the HTTP API may route `method`: nil when no external plugin serves its
    /// interface, else whether the plugin's manifest lists it under "http".
    func httpExposed(_ method: String) -> Bool? {
        guard let (interface, _) = method.methodNameParts else { return nil }
        return http.withLock { $0[String(interface)]?.contains(method) }
    }

    /// Records `plugin` as the server of all `interfaces`, or of none: returns an interface
    /// another plugin already serves, and that plugin.
    func claim(_ interfaces: [String], for plugin: String, http methods: Set<String> = []) -> (String, String)? {
        let conflict = owners.withLock { table -> (String, String)? in
            for interface in interfaces {
                if let owner = table[interface], owner != plugin { return (interface, owner) }
            }
            for interface in interfaces { table[interface] = plugin }
            return nil
        }
        if conflict == nil {
            http.withLock { table in
                for interface in interfaces { table[interface] = methods.filter { $0.hasPrefix(interface + ".") } }
            }
        }
        return conflict
    }

    /// Forgets the interface if `plugin` serves it; false when another plugin does.
    func release(_ interface: String, by plugin: String) -> Bool {
        owners.withLock { table in
            guard table[interface] == nil || table[interface] == plugin else { return false }
            table[interface] = nil
            _ = http.withLock { $0.removeValue(forKey: interface) }
            return true
        }
    }
}

import Bus

/// Serves external plugins' interfaces: each on the varlink dispatcher (so clients, appctl and
/// introspection see it) and each method on the bus with the manifest's requirements (so the
/// same gates apply as to built-in plugins).
struct InterfaceRegistrar: Sendable {
    let dispatcher: VarlinkDispatcher

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

    /// Serves the interfaces (replacing an earlier registration of the same plugin).
    func register(_ interfaces: [VarlinkInterface], manifest: ExternalManifest, gateway: PluginGateway) throws {
        for interface in interfaces {
            if let existing = dispatcher.interface(interface.name), existing.text != interface.text { unregister(interface.name) }
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

    func unregister(_ interface: String) {
        dispatcher.unregister(interface: interface)
        dispatcher.bus.unregister(interface: interface)
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus

/// Which errors a routed method can answer over HTTP, and a schema for each: its interface's
/// own errors, what the gates its requirements pass through raise, what an idempotency key or
/// If-Match adds, and what every call can meet (bad parameters, storage, deadline). Each error
/// is `{"error": "<full name>", "parameters": {…}}` with the parameters its IDL declares.
struct OpenAPIErrors {
    let dispatcher: VarlinkDispatcher

    /// What the gates raise for `requirements`, by full name, as each gate declares it
    /// (`Gate.errors(answering:)`; the gate's interface must be served for its errors to be
    /// listed), and RequirementUnavailable when a requirement has no gate.
    func gateErrors(_ requirements: [Requirement]) -> [String] {
        dispatcher.bus.chain.errors(answering: requirements) + (requirements.isEmpty ? [] : ["io.appd.Bus.RequirementUnavailable"])
    }

    /// What any routed call can answer besides its own errors.
    static let common = [
        "org.varlink.service.InvalidParameter", "io.appd.Bus.StorageFailed", "io.appd.Bus.Busy", "io.appd.Bus.DeadlineExceeded",
        "io.appd.Bus.InternalError",
    ]

    /// Every error the method can answer, by full name, each one that a served IDL declares.
    func errors(of method: String, in interface: VarlinkInterface, requirements: [Requirement], idempotent: Bool) -> [String] {
        var names = interface.errors.map { "\(interface.name).\($0.name)" }
        names += gateErrors(requirements) + Self.common
        if idempotent {
            names += ["io.appd.Bus.InvalidIdempotencyKey", "io.appd.Bus.IdempotencyKeyInUse", "io.appd.Bus.IdempotencyKeyReused", "io.appd.Bus.IdempotencyOutcomeUnknown"]
        }
        var seen: Set<String> = []
        return names.filter { definition(of: $0) != nil && seen.insert($0).inserted }
    }

    /// The IDL definition of `name` (`io.appd.Auth.SessionExpired`) among the served interfaces.
    func definition(of name: String) -> (interface: String, error: VarlinkErrorDefinition)? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        let interface = String(name[..<dot]), short = String(name[name.index(after: dot)...])
        guard let served = dispatcher.interface(interface), let error = served.errors.first(where: { $0.name == short }) else { return nil }
        return (interface, error)
    }

    /// `components/schemas` key of an error (apart from the interface's types).
    static func schemaName(_ error: String) -> String { "error." + error }
}

// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import Bus
@testable import Serving
@testable import BusCore
@testable import Runtime
@testable import Varlink

/// The errors the bus itself sends are declared by the interfaces it serves, with the fields
/// they carry: varlink clients, the OpenAPI document and the metrics rely on the names.
@Suite struct WireErrorContractTests {
    static let errors: [any WireError] = [
        NoHandler(method: "m"), DeadlineExceeded(method: "m"), RequirementUnavailable(method: "m", requirement: .admin),
        InvalidParameters(method: "m", parameter: "p", reason: "r"), WrongCallShape(method: "m", streaming: true),
        WrongCallShape(method: "m", streaming: false), SubscriptionOverflow(capacity: 1), InvalidTopic(topic: "t", reason: "r"),
        InvalidEventPayload(topic: "t", reason: "r"), TopicOwned(topic: "t", publisher: "p"), TopicNotDeclared(topic: "t", plugin: "p"), InterfaceNotFound(interface: "i"),
        TooManyStreams(limit: 1), StreamLifetimeEnded(seconds: 1), RateLimited(retryAfterSeconds: 1),
        MethodNotFound(method: "m"), PermissionDenied(reason: "r"), InternalError(messageID: "1"),
        PoolRefusal.busy(pool: "p", queueLimit: 1), PoolRefusal.closed(pool: "p"),
    ]

    @Test func everyBusErrorIsDeclaredWithTheFieldsItCarries() throws {
        let dispatcher = try VarlinkDispatcher(bus: EventBus(), info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        try dispatcher.register(VarlinkInterface(parsing: BusInterface.idl))
        for error in Self.errors {
            #expect(dispatcher.declares(error: error.wireName), "\(error.wireName) is sent but not declared")
            let (interfaceName, member) = try #require(error.wireName.methodNameParts)
            let interface = try #require(dispatcher.interface(String(interfaceName)))
            let definition = try #require(interface.error(String(member)))
            let problem = interface.check(.object(error.wireParameters), against: .structure(definition.fields), path: "")
            #expect(problem == nil, "\(error.wireName): \(String(describing: problem))")
        }
    }

    /// An external plugin's error reply passes on under the name the plugin gave it; a name no
    /// served interface declares is counted as `undeclared`, so a plugin cannot grow the
    /// metrics without bound.
    @Test func anUndeclaredErrorNameIsCountedAsUndeclared() async throws {
        struct Named: WireError {
            let wireName: String
            var wireParameters: [String: JSONValue] { [:] }
            var description: String { wireName }
        }
        let bus = EventBus()
        let dispatcher = try VarlinkDispatcher(bus: bus, info: .init(vendor: "t", product: "t", version: "1", url: "u"))
        try dispatcher.register(
            VarlinkInterface(
                parsing: """
                    # Fails as asked.
                    interface io.example.Metered

                    # Fails with the declared error, or with one nobody declared.
                    method Fail(declared: bool) -> ()

                    # Declared.
                    error Known ()
                    """))
        let madeUp = "io.example.Metered.MadeUp\(UInt32.random(in: 0...UInt32.max))"
        try bus.registerRaw(method: "io.example.Metered.Fail", requirements: []) { _, parameters in
            throw Named(wireName: parameters["declared"] == true ? "io.example.Metered.Known" : madeUp)
        }
        var errors: [String] = []
        for declared in [true, false] {
            try await dispatcher.handle(VarlinkCall(method: "io.example.Metered.Fail", parameters: ["declared": .bool(declared)]), as: Caller()) {
                errors.append($0.error ?? "none")
            }
        }
        #expect(errors == ["io.example.Metered.Known", madeUp], "the client still gets the plugin's own name")
        let labels = { (outcome: String) in Metrics.shared.counter("appd_calls_total", labels: ["io.example.Metered.Fail", outcome, "varlink"]) }
        #expect(labels("io.example.Metered.Known") == 1)
        #expect(labels(madeUp) == 0)
        #expect(labels("undeclared") == 1)
    }
}

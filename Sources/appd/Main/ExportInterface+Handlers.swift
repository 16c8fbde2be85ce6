import Contracts
import Bus
import ExternalPlugins
import PluginKit
import Storage

extension ExportInterface {
    static func install(on dispatcher: VarlinkDispatcher, host: PluginHost, external: ExternalPluginHost?, eventLog: EventLog) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Mine.self) { _, envelope in
            guard let user = envelope.caller.principal?.userID else { throw ExportError.unknownAccount(email: "") }
            return .init(export: try await document(user, host: host, external: external, bus: bus, eventLog: eventLog))
        }
        try bus.register(User.self) { command, envelope in
            let found = try await bus.send(LookupAccount(email: command.email), causedBy: envelope)
            guard let user = found.userID else { throw ExportError.unknownAccount(email: command.email) }
            envelope.logger.notice("user data exported", metadata: ["user.id": user])
            return .init(export: try await document(user, host: host, external: external, bus: bus, eventLog: eventLog))
        }
    }

    /// `{format, exportedAt, userId, plugins: {name: …}, events: […]}`, and `incomplete` naming
    /// each external plugin that declares an export but could not give it (not running).
    static func document(_ user: String, host: PluginHost, external: ExternalPluginHost?, bus: EventBus, eventLog: EventLog) async throws -> JSONValue {
        var events: [JSONValue] = []
        var after: Int64 = 0
        while true {
            let page = try await eventLog.events(about: user, after: after, limit: 500)
            for event in page {
                after = event.sequence ?? after
                var object: [String: JSONValue] = ["topic": .string(event.topic), "time": .string(event.timestamp.rfc3339)]
                if let sequence = event.sequence { object["seq"] = .int(sequence) }
                object["payload"] = event.redacted ? .null : ((try? event.json()) ?? .null)
                events.append(.object(object))
            }
            if page.isEmpty { break }
        }
        var plugins = try await host.exportUserData(user)
        var incomplete: [JSONValue] = []
        for exporter in await external?.exporters() ?? [] {
            if let why = exporter.unavailable {
                incomplete.append(["plugin": .string(exporter.plugin), "reason": .string(why)])
                continue
            }
            // A running plugin that fails to give its part fails the export: a document that
            // silently lacks it would claim to be everything.
            do {
                plugins[exporter.plugin] = try await bus.call(method: exporter.method, parameters: ["userId": .string(user)], as: .daemon)
            } catch {
                throw DaemonError.pluginUnavailable(plugin: exporter.plugin, reason: "its part of the export (\(exporter.method)) failed: \(error)")
            }
        }
        var document: [String: JSONValue] = [
            "format": 1, "exportedAt": .string(WallTime.now().rfc3339), "userId": .string(user), "plugins": .object(plugins), "events": .array(events),
        ]
        if !incomplete.isEmpty { document["incomplete"] = .array(incomplete) }
        return .object(document)
    }
}

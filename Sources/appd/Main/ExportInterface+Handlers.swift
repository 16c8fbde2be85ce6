// SPDX-License-Identifier: Apache-2.0
import Contracts
import Bus
import ExternalPlugins
import PluginKit
import Storage

extension ExportInterface {
    /// `eventBytes`: the most bytes of event payloads one export carries (the plugins' parts are
    /// bounded by each account's storage quota).
    static func install(on dispatcher: VarlinkDispatcher, host: PluginHost, external: ExternalPluginHost?, eventLog: EventLog, eventBytes: Int) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        try bus.register(Mine.self) { _, envelope in
            guard let user = envelope.caller.principal?.userID else { throw ExportError.unknownAccount(email: "") }
            return .init(export: try await document(user, host: host, external: external, bus: bus, eventLog: eventLog, eventBytes: eventBytes))
        }
        try bus.register(User.self) { command, envelope in
            let found = try await bus.send(LookupAccount(email: command.email), causedBy: envelope)
            guard let user = found.userID else { throw ExportError.unknownAccount(email: command.email) }
            envelope.logger.notice("user data exported", metadata: ["user.id": user])
            return .init(export: try await document(user, host: host, external: external, bus: bus, eventLog: eventLog, eventBytes: eventBytes))
        }
    }

    /// `{format, exportedAt, userId, plugins: {name: …}, events: […]}`, and `incomplete` naming
    /// each external plugin that declares an export but could not give it (not running). The
    /// events, oldest first, stop at `eventBytes` of payloads: then `eventsIncomplete` says
    /// from which sequence on they were left out, so a long history cannot make one export
    /// hold appd's memory (security review 2, finding 1).
    static func document(_ user: String, host: PluginHost, external: ExternalPluginHost?, bus: CommandBus, eventLog: EventLog, eventBytes: Int) async throws -> JSONValue {
        var events: [JSONValue] = []
        var after: Int64 = 0
        var used = 0
        var leftOut: Int64?
        paging: while true {
            let page = try await eventLog.events(about: user, after: after, limit: 500)
            for event in page {
                let size = event.redacted ? 0 : ((try? event.jsonBytes().count) ?? 0)
                if used + size > eventBytes {
                    leftOut = event.sequence
                    break paging
                }
                used += size
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
        if let leftOut {
            document["eventsIncomplete"] = [
                "fromSeq": .int(leftOut), "reason": .string("the events past \(eventBytes >> 20) MiB (exportEventsMB) are not in this export"),
            ]
        }
        return .object(document)
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import PluginKit
import Testing
import ExternalPlugins

@Suite struct ExternalManifestTests {
    static func parse(_ extra: String = "") throws(ManifestProblem) -> ExternalManifest {
        let text = #"{"name": "notes", "version": "1.0", "executable": "notes", "interfaces": ["io.example.Notes"]"# + extra + "}"
        return try ExternalManifest.parse(Array(text.utf8))
    }

    static func problem(_ extra: String) -> String? {
        do {
            _ = try parse(extra)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func defaults() throws {
        let manifest = try Self.parse()
        #expect(manifest.callTimeout == .seconds(30))
        #expect(manifest.streamIdleTimeout == .seconds(30))
        #expect(manifest.maxConcurrentCalls == 4)
        #expect(manifest.defaultRequirements == [.session])
        #expect(manifest.enabled)
    }

    @Test func theStreamIdleTimeoutFollowsTheCallTimeoutUnlessSet() throws {
        #expect(try Self.parse(#", "callTimeoutSeconds": 5"#).streamIdleTimeout == .seconds(5))
        let long = try Self.parse(#", "callTimeoutSeconds": 5, "streamIdleTimeoutSeconds": 7200"#)
        #expect(long.callTimeout == .seconds(5))
        #expect(long.streamIdleTimeout == .seconds(7200))
        #expect(Self.problem(#", "streamIdleTimeoutSeconds": 0"#) == "streamIdleTimeoutSeconds must be more than 0 and at most 86400")
        #expect(Self.problem(#", "streamIdleTimeoutSeconds": "long""#) == "streamIdleTimeoutSeconds must be a number of seconds")
        #expect(Self.problem(#", "callTimeoutSeconds": 7200"#) == "callTimeoutSeconds must be more than 0 and at most 3600")
    }

    @Test func theSandboxSectionHasSafeDefaultsAndIsChecked() throws {
        let plain = try Self.parse().sandbox
        #expect(!plain.network && plain.readOnlyPaths.isEmpty)
        #expect(plain.limits.memoryMB == 256 && plain.limits.openFiles == 256 && plain.limits.processes == 64)
        #expect(plain.limits.addressSpaceMB == nil && plain.limits.cpuSeconds == nil)
        let declared = try Self.parse(#", "sandbox": {"network": true, "readOnlyPaths": ["/opt/venv"], "limits": {"memoryMB": 64, "cpuSeconds": 600}}"#).sandbox
        #expect(declared.network && declared.readOnlyPaths == ["/opt/venv"])
        #expect(declared.limits.memoryMB == 64 && declared.limits.cpuSeconds == 600 && declared.limits.openFiles == 256)
        #expect(Self.problem(#", "sandbox": {"network": "yes"}"#) == "sandbox.network must be true or false")
        #expect(Self.problem(#", "sandbox": {"readOnlyPaths": ["venv"]}"#) == "sandbox.readOnlyPaths: 'venv' is not an absolute path without '..'")
        #expect(Self.problem(#", "sandbox": {"readOnlyPaths": ["/opt/../root"]}"#)?.hasPrefix("sandbox.readOnlyPaths:") == true)
        #expect(Self.problem(#", "sandbox": {"limits": {"memoryMB": 0}}"#) == "sandbox.limits.memoryMB must be a whole number from 16 to 1048576")
        #expect(Self.problem(#", "sandbox": {"limits": {"memoryMb": 64}}"#) == "sandbox.limits: unknown key 'memoryMb'; did you mean 'memoryMB'?")
        #expect(Self.problem(#", "sandbox": {"netwrok": true}"#) == "sandbox: unknown key 'netwrok'; did you mean 'network'?")
        #expect(Self.problem(#", "sandbox": []"#)?.hasPrefix("'sandbox' must be an object") == true)
    }

    /// A user's data leaves only through appd's export: the method must be admin-only and not
    /// routed over HTTP.
    @Test func theExportMethodMustBeDeclaredAndAdminOnly() throws {
        let export = #", "export": "io.example.Notes.ExportUserData""#
        let admin = #", "requirements": {"io.example.Notes.ExportUserData": ["admin"]}"#
        #expect(try Self.parse(admin + export).export == "io.example.Notes.ExportUserData")
        #expect(try Self.parse().export == nil)
        #expect(Self.problem(export)?.hasPrefix("export: io.example.Notes.ExportUserData must require admin") == true, "\(Self.problem(export) ?? "")")
        #expect(Self.problem(#", "requirements": {"io.example.Notes.ExportUserData": ["session"]}"# + export)?.contains("must require admin") == true)
        #expect(Self.problem(admin + #", "export": "io.other.Thing.Export""#)?.hasPrefix("export: name a method of a declared interface") == true)
        #expect(Self.problem(admin + #", "export": 3"#)?.hasPrefix("export: name a method") == true)
        let routed = admin + #", "http": ["io.example.Notes.ExportUserData"]"# + export
        #expect(Self.problem(routed) == "export: io.example.Notes.ExportUserData must not be listed under \"http\"")
    }

    @Test func aKeyGivenTwiceIsRefused() {
        #expect(Self.problem(#", "defaultRequirements": ["admin"], "defaultRequirements": []"#)?.contains("the member name 'defaultRequirements' appears twice") == true)
    }

    @Test func anUnknownKeyIsNamedWithASuggestion() {
        #expect(Self.problem(#", "streamIdleTimeoutSecond": 5"#) == "unknown key 'streamIdleTimeoutSecond'; did you mean 'streamIdleTimeoutSeconds'?")
    }

    @Test func declaredEventsAreCheckedAndPublishedPayloadsMustFitThem() throws {
        let manifest = try Self.parse(
            #", "capabilities": ["auth.resetTokens"], "events": {"notes.shared": {"type": "(noteId: string, userId: string, with: ?string)", "audience": "owner"}, "#
                + #""notes.audit": {"type": "(noteId: string)", "audience": "admin", "durable": false, "version": 2}}"#
        )
        #expect(manifest.publishes == ["notes.audit", "notes.shared"])
        #expect(manifest.events.map(\.audience) == [.admin, .owner])
        #expect(manifest.events.first?.durable == false && manifest.events.first?.version == 2)
        #expect(manifest.capabilities == ["auth.resetTokens"])

        #expect(Self.problem(#", "events": {"notes.x": {"type": "(noteId: strin)", "audience": "owner"}}"#)?.hasPrefix("events.notes.x.type:") == true)
        #expect(
            Self.problem(#", "events": {"notes.x": {"type": "(noteId: string)", "audience": "owner"}}"#)
                == "events.notes.x: an owner-audience event names its owner in a 'userId: string' field")
        #expect(
            Self.problem(#", "events": {"notes.x": {"type": "(userId: string)", "audience": "everyone"}}"#)
                == "events.notes.x.audience is owner, admin or capability:NAME")
        #expect(Self.problem(#", "events": {"notes.*": {"type": "(userId: string)", "audience": "owner"}}"#)?.hasPrefix("events: 'notes.*' is not a topic") == true)

        // On the bus: the plugin's payloads are checked against the declared type, the owner
        // comes from userId, and a topic another plugin owns is refused.
        let bus = EventBus()
        let declared = manifest.events.first { $0.topic == "notes.shared" }!
        try bus.topics.register(
            TopicInfo(topic: declared.topic, version: 1, schema: try EventSchema(parsing: declared.type), audience: .owner, durable: true, publisher: "notes", external: true))
        let event = try bus.event(topic: "notes.shared", payload: ["noteId": "n1", "userId": "u_ada"], causedBy: nil)
        #expect(event.owner == "u_ada")
        #expect(throws: InvalidEventPayload.self) { try bus.event(topic: "notes.shared", payload: ["noteId": 1, "userId": "u_ada"], causedBy: nil) }
        #expect(throws: InvalidEventPayload.self) { try bus.event(topic: "notes.shared", payload: ["noteId": "n1"], causedBy: nil) }
        #expect(throws: InvalidEventPayload.self) { try bus.event(topic: "notes.shared", payload: ["noteId": "n1", "userId": "u", "extra": 1], causedBy: nil) }
        #expect(throws: TopicConflict.self) {
            try bus.topics.register(
                TopicInfo(
                    topic: "notes.shared", version: 1, schema: try EventSchema(parsing: "(userId: string)"), audience: .owner, durable: true, publisher: "other", external: true))
        }
    }
}

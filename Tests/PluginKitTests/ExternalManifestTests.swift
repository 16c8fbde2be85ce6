import Bus
import PluginKit
import Testing

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

    @Test func anUnknownKeyIsNamedWithASuggestion() {
        #expect(Self.problem(#", "streamIdleTimeoutSecond": 5"#) == "unknown key 'streamIdleTimeoutSecond'; did you mean 'streamIdleTimeoutSeconds'?")
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

/// An external plugin's part of a user's data export: the method its manifest declares
/// (`export`, admin only) is called by appd for the user being exported.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ExternalPluginExportTests {
    typealias E = ExternalPluginTests

    static var exporting: [String: Any] {
        [
            "export": "io.appd.examples.Greeter.ExportUserData",
            "requirements": [
                "io.appd.examples.Greeter.Hello": ["session"], "io.appd.examples.Greeter.ExportUserData": ["admin"],
                "io.appd.examples.Greeter.Count": [String](),
            ],
        ]
    }

    static func export(_ daemon: Daemon, email: String) async throws -> (Outcome, [String: Any]) {
        let out = try await E.ctl(daemon, ["--json", "export", "user", "--email", email])
        let json = (try? JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]) ?? [:]
        return (out, (json["export"] as? [String: Any]) ?? json)
    }

    @Test func theExportHoldsEachUsersOwnPartAndNamesAPluginThatCannotGiveIt() async throws {
        let dir = try E.newDirectory()
        try E.install(in: dir + "/data/plugins", changes: Self.exporting)
        let daemon = try await Daemon.start(directory: dir)
        _ = try await E.wait(daemon, "greeter") { $0["state"] as? String == "running" }
        for (email, greetings) in [("ada@example.com", 3), ("bob@example.com", 1)] {
            let home = ["XDG_CONFIG_HOME": daemon.directory + "/config-" + email]
            let signup = try await run(Binaries.appctl, ["--socket", daemon.socket, "signup", email, "--password-stdin"], stdin: "a password\n", environment: home)
            #expect(signup.status == 0, "\(signup.stderr)")
            for _ in 0..<greetings {
                let hello = try await run(Binaries.appctl, ["--socket", daemon.socket, "greeter", "hello"], environment: home)
                #expect(hello.status == 0, "\(hello.stderr)")
            }
        }
        let (adaOut, ada) = try await Self.export(daemon, email: "ada@example.com")
        let (_, bob) = try await Self.export(daemon, email: "bob@example.com")
        #expect(((ada["plugins"] as? [String: Any])?["greeter"] as? [String: Any])?["greetings"] as? Int == 3, "\(adaOut.stdout) \(adaOut.stderr)")
        #expect(((bob["plugins"] as? [String: Any])?["greeter"] as? [String: Any])?["greetings"] as? Int == 1, "\(bob)")
        #expect(ada["incomplete"] == nil)
        // Disabled, the plugin cannot give its part: the export says so instead of leaving it out silently.
        #expect(try await E.ctl(daemon, ["plugins", "disable", "greeter"]).status == 0)
        let (_, without) = try await Self.export(daemon, email: "ada@example.com")
        let incomplete = without["incomplete"] as? [[String: Any]] ?? []
        #expect(incomplete.first?["plugin"] as? String == "greeter" && incomplete.first?["reason"] as? String == "disabled", "\(without)")
        #expect((without["plugins"] as? [String: Any])?["greeter"] == nil)
        #expect(await daemon.stop() == 0)
    }
}

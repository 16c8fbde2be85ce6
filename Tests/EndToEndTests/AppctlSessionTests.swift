// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2))) struct AppctlSessionTests {
    @Test func signupLoginWhoamiLogoutWithASavedSession() async throws {
        let daemon = try await Daemon.start()
        let config = daemon.directory + "/config"
        func ctl(_ args: [String], stdin: String? = nil) async throws -> Outcome {
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: ["XDG_CONFIG_HOME": config])
        }
        let anonymous = try await ctl(["whoami"])
        #expect(anonymous.status == 67)
        #expect(anonymous.stderr.contains("Run 'appctl login <email>'"))

        let signup = try await ctl(["signup", "ada@example.com", "--password-stdin", "--display-name", "Ada"], stdin: "correct horse\n")
        #expect(signup.status == 0)
        #expect(signup.stdout == "signed in as ada@example.com\n")
        let file = config + "/appctl/sessions.json"
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let me = try await ctl(["--json", "whoami"])
        #expect(me.status == 0)
        #expect(me.stdout.contains("\"email\":\"ada@example.com\""))
        #expect(!me.stdout.contains("Token"))
        #expect(try await ctl(["--json", "onboard"]).stdout.contains("\"onboarded\":true"))
        // Sign-up signed in once: one session, one auth.signedIn (rating counts them).
        let signedIn = try await run(
            Binaries.appctl, ["--socket", daemon.socket, "--json", "events", "tail", "--since", "0", "auth.signedIn"],
            environment: ["XDG_CONFIG_HOME": config], timeout: 2)
        #expect(signedIn.stdout.components(separatedBy: "\"auth.signedIn\"").count - 1 == 1, "\(signedIn)")

        let wrong = try await ctl(["login", "ada@example.com", "--password-stdin"], stdin: "not it\n")
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("io.appd.Auth.InvalidCredentials"))
        let noTTY = try await ctl(["login", "ada@example.com"])
        #expect(noTTY.status == 64)

        #expect(try await ctl(["logout"]).stdout == "signed out\n")
        #expect(try await ctl(["whoami"]).status == 67)
        #expect(await daemon.stop() == 0)
    }

    @Test func identitiesAndEmailVerificationFromAppctl() async throws {
        let daemon = try await Daemon.start()
        let config = daemon.directory + "/config"
        func ctl(_ args: [String], stdin: String? = nil) async throws -> Outcome {
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: ["XDG_CONFIG_HOME": config])
        }
        #expect(try await ctl(["signup", "ada@example.com", "--password-stdin"], stdin: "correct horse\n").status == 0)
        // The short words and the derived names reach the same methods.
        let identities = try await ctl(["--json", "auth", "identities"])
        #expect(identities.status == 0 && identities.stdout.contains("\"identities\":[]"), "\(identities)")
        #expect(try await ctl(["--json", "auth", "list-identities"]).stdout == identities.stdout)
        let unlink = try await ctl(["auth", "unlink", "--provider", "apple"])
        #expect(unlink.status == 1 && unlink.stderr.contains("io.appd.Auth.IdentityNotLinked"), "\(unlink)")
        let link = try await ctl(["auth", "link", "--provider", "apple", "--id-token", "x.y.z"])
        #expect(link.status == 1 && link.stderr.contains("io.appd.Auth.ProviderNotConfigured"), "\(link)")
        let verify = try await ctl(["auth", "verify-email", "--verification-token", "not-a-token"])
        #expect(verify.status == 1 && verify.stderr.contains("io.appd.Auth.InvalidVerificationToken"), "\(verify)")
        let again = try await ctl(["auth", "request-email-verification", "--email", "ada@example.com"])
        #expect(again.status == 0 && again.stdout.contains("verification mail is on its way"), "\(again)")
        #expect(try await ctl(["--json", "whoami"]).stdout.contains("\"emailVerified\":false"))
        #expect(await daemon.stop() == 0)
    }

    @Test func anExpiredAccessTokenIsRefreshedTransparently() async throws {
        let daemon = try await Daemon.start(["--access-token-seconds", "1"])
        let config = daemon.directory + "/config"
        func ctl(_ args: [String], stdin: String? = nil) async throws -> Outcome {
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: ["XDG_CONFIG_HOME": config])
        }
        #expect(try await ctl(["signup", "bo@example.com", "--password-stdin"], stdin: "correct horse\n").status == 0)
        let before = try String(contentsOfFile: config + "/appctl/sessions.json", encoding: .utf8)
        // The access token lives 1 s: let it expire.
        try await Task.sleep(for: .milliseconds(1500))
        let me = try await ctl(["whoami"])
        #expect(me.status == 0)
        #expect(me.stdout.contains("bo@example.com"))
        let after = try String(contentsOfFile: config + "/appctl/sessions.json", encoding: .utf8)
        #expect(before != after)  // the rotated tokens were saved
        #expect(await daemon.stop() == 0)
    }

    @Test func accountsSurviveARestart() async throws {
        let daemon = try await Daemon.start()
        let config = daemon.directory + "/config"
        let env = ["XDG_CONFIG_HOME": config]
        #expect(
            try await run(Binaries.appctl, ["--socket", daemon.socket, "signup", "cy@example.com", "--password-stdin"], stdin: "correct horse\n", environment: env).status == 0)
        #expect(await daemon.stop() == 0)
        let restarted = try await Daemon.start(reusing: daemon)
        let me = try await run(Binaries.appctl, ["--socket", restarted.socket, "whoami"], environment: env)
        #expect(me.status == 0)
        #expect(me.stdout.contains("cy@example.com"))
        #expect(await restarted.stop() == 0)
    }
}

@Suite(.serialized, .timeLimit(.minutes(2))) struct AppctlTodosTests {
    @Test func addListCompleteEditRemoveAndClear() async throws {
        let daemon = try await Daemon.start()
        let env = ["XDG_CONFIG_HOME": daemon.directory + "/config"]
        func ctl(_ args: [String], stdin: String? = nil) async throws -> Outcome {
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: env)
        }
        #expect(try await ctl(["signup", "ada@example.com", "--password-stdin"], stdin: "correct horse\n").status == 0)
        let notYet = try await ctl(["todos", "add", "Buy", "milk"])
        #expect(notYet.status == 1)
        // Errors are sentences with the next step; the varlink name stays to search for.
        #expect(notYet.stderr == "Error: Complete onboarding first: appctl onboard (io.appd.Auth.OnboardingRequired)\n", "\(notYet.stderr)")
        let asJSON = try await ctl(["--json", "todos", "add", "Buy", "milk"])
        let error = try JSONSerialization.jsonObject(with: Data(asJSON.stderr.utf8)) as? [String: Any]
        #expect(error?["error"] as? String == "io.appd.Auth.OnboardingRequired" && error?["message"] as? String == "Complete onboarding first: appctl onboard")
        // Password fields never need the command line: prompted for on a terminal, or read
        // (one line each, in field order) with --password-stdin.
        let changed = try await ctl(["auth", "change-password", "--password-stdin"], stdin: "correct horse\nbrand new pass\n")
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(try await ctl(["login", "ada@example.com", "--password-stdin"], stdin: "brand new pass\n").status == 0)
        let noTerminal = try await ctl(["auth", "reset-password", "--reset-token", "t"], stdin: "")
        #expect(
            noTerminal.status == 64 && noTerminal.stderr.contains("missing --new-password <string> (or leave it out to be prompted, or pass --password-stdin)"),
            "\(noTerminal.stderr)")
        let help = try await ctl(["auth", "--help"])
        #expect(help.stdout.contains("presenting it again revokes every session descended from it."), "\(help.stdout)")
        #expect(try await ctl(["auth", "reset-password", "--help"]).stdout.contains("The token from the reset message."))
        // Extra words are refused before anything is done (logout x used to sign out anyway).
        for command in [["logout", "x"], ["todos", "ls", "x"], ["todos", "clear", "x"], ["payments", "status", "x"], ["plugins", "rescan", "x"], ["events", "topics", "x"]] {
            let extra = try await ctl(command)
            #expect(extra.status == 64 && extra.stderr.contains("'x' is one too many"), "\(command): \(extra.stderr)")
        }
        #expect(try await ctl(["whoami"]).status == 0)
        let short = try await ctl(["signup", "bo@example.com", "--password-stdin"], stdin: "short\n")
        #expect(short.stderr == "Error: password: needs at least 8 characters (io.appd.Auth.ValidationFailed)\n", "\(short.stderr)")
        #expect(try await ctl(["onboard"]).status == 0)

        let added = try await ctl(["todos", "add", "Buy", "milk", "--due", "2026-12-24T18:00:00Z"])
        #expect(added.status == 0)
        #expect(added.stdout.hasSuffix("[ ] Buy milk\n"))
        let id = String(added.stdout.prefix { $0 != " " })
        _ = try await ctl(["todos", "add", "Call", "Bob"])

        let list = try await ctl(["todos", "ls"])
        // The ID column is as wide as its longest short id (6 characters, 7 when one would begin with '-').
        #expect(list.stdout.wholeMatch(of: /ID {6,7}DONE  TITLE     DUE\n[\s\S]*/) != nil, "\(list.stdout)")
        #expect(list.stdout.contains("Buy milk  2026-12-24T18:00:00.000Z"))
        #expect(try await ctl(["todos", "done", id]).stdout.contains("[✓] Buy milk"))
        #expect(try await ctl(["--json", "todos", "ls", "--done"]).stdout.split(separator: "\n").count == 1)
        #expect(try await ctl(["todos", "edit", id, "--title", "Buy oat milk"]).stdout.contains("Buy oat milk"))
        #expect(try await ctl(["todos", "undo", id]).stdout.contains("[ ] Buy oat milk"))
        #expect(try await ctl(["todos", "done", id]).status == 0)
        #expect(try await ctl(["todos", "clear"]).stdout == "deleted 1 completed todo(s)\n")
        let missing = try await ctl(["todos", "rm", id])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("io.appd.Todos.NotFound"))
        let remaining = try await ctl(["--json", "todos", "ls"])
        #expect(remaining.stdout.contains("Call Bob"))
        #expect(try await ctl(["todos", "get", "--id", "t_nope"]).status == 1)  // derived commands still reachable
        #expect(await daemon.stop() == 0)
    }

    /// Hardening finding 10: server-provided text reaches the terminal with its control
    /// characters escaped; names and emails with them are refused.
    @Test func controlCharactersNeverReachTheTerminalRaw() async throws {
        let daemon = try await Daemon.start()
        let env = ["XDG_CONFIG_HOME": daemon.directory + "/config"]
        func ctl(_ args: [String], stdin: String? = nil) async throws -> Outcome {
            try await run(Binaries.appctl, ["--socket", daemon.socket] + args, stdin: stdin, environment: env)
        }
        let escaped = try await ctl(["signup", "ada@example.com", "--password-stdin", "--display-name", "Ada\u{1b}]0;pwned\u{7}"], stdin: "correct horse\n")
        #expect(escaped.status != 0 && escaped.stderr.contains("displayName"), "\(escaped.stderr)")
        #expect(try await ctl(["signup", "ada\u{1b}[2J@example.com", "--password-stdin"], stdin: "correct horse\n").status != 0)
        #expect(try await ctl(["signup", "ada@example.com", "--password-stdin"], stdin: "correct horse\n").status == 0)
        #expect(try await ctl(["onboard"]).status == 0)
        let added = try await ctl(["todos", "add", "evil\u{1b}]0;pwned\u{7}title"])
        #expect(added.status == 0)
        let list = try await ctl(["todos", "ls"])
        for output in [added.stdout, list.stdout] {
            #expect(!output.unicodeScalars.contains { $0.value == 0x1b || $0.value == 0x07 }, "\(output)")
            #expect(output.contains("evil\\u{1b}]0;pwned\\u{7}title"), "\(output)")
        }
        // Scripts get the text intact, as JSON.
        #expect(try await ctl(["--json", "todos", "ls"]).stdout.contains(#"evil\u001b]0;pwned\u0007title"#))
        #expect(await daemon.stop() == 0)
    }
}

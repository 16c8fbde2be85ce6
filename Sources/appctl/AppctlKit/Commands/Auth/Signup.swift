// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct Signup: Leaf {
    static let path = ["signup"]
    static let abstract = "Create an account, signed in to it."
    static let discussion = "Prompts for the password (no echo) on a terminal, checks it against the daemon's rules, then asks for it again."
    @Argument("email", "The account's email address.") var email: String?
    @Option("--display-name", "name", "The name to show.") var displayName: String?
    @Flag("--password-stdin", "Read the password from the first line of standard input.") var passwordFromStdin: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let email else { throw .usage("signup needs one email address", command: Self.command) }
        let password = try PasswordInput.read(prompt: "Password: ", fromStandardInput: passwordFromStdin, command: Self.command)
        // The daemon's rules first: a password that cannot work is refused before it is typed twice.
        _ = try context.call(AuthInterface.CheckSignUp(email: email, password: password))
        if !passwordFromStdin, try PasswordInput.read(prompt: "Repeat password: ", fromStandardInput: false, command: Self.command) != password {
            throw .usage("the passwords differ", command: Self.command)
        }
        let reply = try context.call(AuthInterface.SignUp(email: email, password: password, displayName: displayName))
        // Sign-up signs in (one session, one auth.signedIn); with no session the daemon wants
        // the address verified first, and signing in would be refused the same way.
        guard let session = reply.session else {
            if context.options.json {
                context.output.reply(["user": (try? JSONValue(encoding: reply.user)) ?? [:], "verificationRequired": true])
            } else {
                print("account created for \(reply.user.email.escapingControlCharacters()); verify the address (the mail's link), then 'appctl login'")
            }
            return ExitCode.ok
        }
        return try Login.keep(session, context: context)
    }
}

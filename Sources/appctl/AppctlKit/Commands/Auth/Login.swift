// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct Login: Leaf {
    static let path = ["login"]
    static let abstract = "Sign in; later commands carry the session."
    static let discussion =
        "Prompts for the password without echo on a terminal. The session is kept (mode 0600) in $XDG_CONFIG_HOME/appctl/ and refreshed when it expires."
    @Argument("email", "The account's email address.") var email: String?
    @Flag("--password-stdin", "Read the password from the first line of standard input.") var passwordFromStdin: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let email else { throw .usage("login needs one email address", command: Self.command) }
        let password = try PasswordInput.read(prompt: "Password for \(email): ", fromStandardInput: passwordFromStdin, command: Self.command)
        return try Self.signIn(email: email, password: password, context: context)
    }

    static func signIn(email: String, password: String, context: Context) throws(AppctlError) -> Int32 {
        try keep(context.call(AuthInterface.SignIn(email: email, password: password)).session, context: context)
    }

    /// Saves `session` as this socket's and says who is signed in.
    static func keep(_ session: Session, context: Context) throws(AppctlError) -> Int32 {
        try SessionStore.standard().save(
            .init(accessToken: session.accessToken, refreshToken: session.refreshToken, email: session.user.email), for: context.options.socketPath)
        if context.options.json {
            context.output.reply(["user": (try? JSONValue(encoding: session.user)) ?? [:]])  // never print the tokens
        } else {
            print("signed in as \(session.user.email.escapingControlCharacters())")
        }
        return ExitCode.ok
    }
}

import BusCore
import Contracts
import Varlink

/// `signup`, `login`, `logout`, `whoami`, `onboard`: the session appctl keeps for you.
enum AuthCommands {
    static let signup = Builtin(
        name: "signup", abstract: "Create an account, then sign in to it.",
        usage: "signup <email> [--display-name <name>] [--password-stdin]",
        discussion: "Prompts for the password (no echo) on a terminal, checks it against the daemon's rules, then asks for it again.",
        options: [AuthCommands.displayName, AuthCommands.passwordStdin]
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, accepting: [AuthCommands.displayName, AuthCommands.passwordStdin], command: "signup")
        guard flags.positionals.count == 1, let email = flags.positionals.first else { throw .usage("signup needs one email address", command: "signup") }
        let fromStdin = flags.switches.contains("--password-stdin")
        let password = try PasswordInput.read(prompt: "Password: ", fromStandardInput: fromStdin, command: "signup")
        // The daemon's rules first: a password that cannot work is refused before it is typed twice.
        _ = try context.call(AuthInterface.CheckSignUp(email: email, password: password))
        if !fromStdin, try PasswordInput.read(prompt: "Repeat password: ", fromStandardInput: false, command: "signup") != password {
            throw .usage("the passwords differ", command: "signup")
        }
        _ = try context.call(AuthInterface.SignUp(email: email, password: password, displayName: flags.value("--display-name")))
        return try signIn(email: email, password: password, context: context)
    }

    static let login = Builtin(
        name: "login", abstract: "Sign in; later commands carry the session.",
        usage: "login <email> [--password-stdin]",
        discussion: "Prompts for the password without echo on a terminal. The session is kept (mode 0600) in $XDG_CONFIG_HOME/appctl/ and refreshed when it expires.",
        options: [AuthCommands.passwordStdin]
    ) { arguments, context throws(AppctlError) in
        let flags = try Flags(arguments, accepting: [AuthCommands.passwordStdin], command: "login")
        guard flags.positionals.count == 1, let email = flags.positionals.first else { throw .usage("login needs one email address", command: "login") }
        let password = try PasswordInput.read(
            prompt: "Password for \(email): ", fromStandardInput: flags.switches.contains("--password-stdin"), command: "login")
        return try signIn(email: email, password: password, context: context)
    }

    static func signIn(email: String, password: String, context: Context) throws(AppctlError) -> Int32 {
        let session = try context.call(AuthInterface.SignIn(email: email, password: password)).session
        try SessionStore.standard().save(
            .init(accessToken: session.accessToken, refreshToken: session.refreshToken, email: session.user.email), for: context.options.socketPath)
        if context.options.json {
            context.output.reply(["user": (try? JSONValue(encoding: session.user)) ?? [:]])  // never print the tokens
        } else {
            print("signed in as \(session.user.email.escapingControlCharacters())")
        }
        return ExitCode.ok
    }

    static let logout = Builtin(name: "logout", abstract: "End this session and forget it.", usage: "logout") { arguments, context throws(AppctlError) in
        try Flags(arguments, command: "logout").noMoreArguments(in: "logout")
        let store = SessionStore.standard()
        defer { try? store.save(nil, for: context.options.socketPath) }
        guard store.session(for: context.options.socketPath) != nil else {
            print("not signed in")
            return ExitCode.ok
        }
        do throws(AppctlError) {
            _ = try context.call(AuthInterface.SignOut())
        } catch .daemon(let reply) where ExitCode.forError(reply) == ExitCode.notSignedIn {
            // Already over on the daemon's side (Unauthenticated, SessionExpired): forgetting it is all that is left.
        }
        print("signed out")
        return ExitCode.ok
    }

    static let whoami = DaemonCommands.simple(
        "whoami", abstract: "Show the signed-in account.", method: AuthInterface.WhoAmI.method)

    static let onboard = DaemonCommands.simple(
        "onboard", abstract: "Mark onboarding complete for the signed-in account.", method: AuthInterface.CompleteOnboarding.method)
}

extension AuthCommands {
    static let displayName = CommandOption("--display-name", value: "name", "The name to show.")
    static let passwordStdin = CommandOption("--password-stdin", "Read the password from the first line of standard input.")
}

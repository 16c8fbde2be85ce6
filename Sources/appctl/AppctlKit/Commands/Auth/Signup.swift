import Contracts

struct Signup: Leaf {
    static let path = ["signup"]
    static let abstract = "Create an account, then sign in to it."
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
        _ = try context.call(AuthInterface.SignUp(email: email, password: password, displayName: displayName))
        return try Login.signIn(email: email, password: password, context: context)
    }
}

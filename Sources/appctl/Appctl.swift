#if canImport(Glibc)
import Glibc
#endif
import Bus

/// appctl's entry point. The control socket arrives with the varlink client; until then appctl
/// knows its help and version.
@main
enum Appctl {
    static let help = """
        OVERVIEW: Control and script appd over its Unix socket (varlink).

        USAGE: appctl [--socket <path>] [--json] [--timeout <seconds>] <subcommand>

        OPTIONS:
          --socket <path>         The daemon's socket (default: $APPD_SOCKET or the runtime dir).
          --json                  Print machine-readable JSON.
          --timeout <seconds>     Give up on a call after this long (default: 30).
          --version               Show the version.
          -h, --help              Show help information.

        SUBCOMMANDS:
          help                    Show help for a subcommand.
        """

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case nil, "-h", "--help", "help":
            print(help)
        case "--version":
            print("appctl \(Version.current)")
        case let other?:
            StandardError.write("Error: unknown subcommand '\(other)'\n\nUSAGE: appctl [--socket <path>] [--json] <subcommand>\n")
            exit(64)
        }
    }
}

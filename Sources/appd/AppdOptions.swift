#if canImport(Glibc)
import Glibc
#endif
import Bus

/// appd's command line.
struct AppdOptions {
    var showHelp = false
    var showVersion = false
    var logLevel: LogLevel = .info

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    static let usage = "USAGE: appd [--log-level <level>] [--version] [--help]"

    static let help = """
        OVERVIEW: appd hosts an application's features as plugins on a typed event bus.

        \(usage)

        OPTIONS:
          --log-level <level>     trace, debug, info, notice, warning, error or critical (default: info)
          --version               Show the version.
          -h, --help              Show help information.

        appd runs in the foreground until SIGINT or SIGTERM, then shuts down gracefully and exits 0.
        """

    static func parse(_ arguments: [String]) throws(UsageError) -> AppdOptions {
        var options = AppdOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "-h", "--help": options.showHelp = true
            case "--version": options.showVersion = true
            case "--log-level":
                guard let value = rest.popFirst() else { throw UsageError(description: "--log-level needs a value") }
                guard let level = LogLevel(name: value) else {
                    throw UsageError(description: "unknown log level '\(value)'")
                }
                options.logLevel = level
            default:
                throw UsageError(description: "unknown option '\(argument)'")
            }
        }
        return options
    }
}

func printError(_ message: String) {
    var text = message
    if !text.hasSuffix("\n") { text += "\n" }
    StandardError.write(text)
}

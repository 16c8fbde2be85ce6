#if canImport(Glibc)
import Glibc
#endif
import Bus

/// appd's command line.
struct AppdOptions {
    var showHelp = false
    var showVersion = false
    var logLevel: LogLevel = .info
    var socket: String?
    var dataDirectory: String?
    var adminGroup: String?
    var limits = ServerLimits()

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    static let usage = "USAGE: appd [--socket <path>] [--data-dir <path>] [--admin-group <group>] [--log-level <level>] [<limit options>]"

    static let help = """
        OVERVIEW: appd hosts an application's features as plugins on a typed event bus.

        \(usage)

        OPTIONS:
          --socket <path>                 The control socket (default: $APPD_SOCKET, else
                                          /run/appd/appd.sock as root, $XDG_RUNTIME_DIR/appd/appd.sock,
                                          or /tmp/appd-<uid>/appd.sock).
          --data-dir <path>               Where the database lives (default: $APPD_DATA_DIR, else
                                          /var/lib/appd as root, $XDG_DATA_HOME/appd or
                                          ~/.local/share/appd).
          --admin-group <group>           Members may call admin methods; the socket becomes 0660
                                          with this group (default: none, socket 0600).
          --log-level <level>             trace, debug, info, notice, warning, error or critical
                                          (default: info).
          --max-message-bytes <n>         Largest message (default: 1048576, at most 16777216).
          --max-connections <n>           Connections in total (default: 128).
          --max-connections-per-uid <n>   Connections per user id (default: 32).
          --max-queued-calls <n>          Unanswered calls per connection before reading pauses
                                          (default: 64).
          --max-pending-output <n>        Unread reply bytes before a client is dropped
                                          (default: 8388608).
          --first-message-timeout <s>     Seconds a new connection has to send a message (default: 10).
          --call-timeout <s>              Seconds a call may take (default: 30).
          --version                       Show the version.
          -h, --help                      Show help information.

        appd runs in the foreground until SIGINT or SIGTERM, then finishes in-flight calls and exits 0.
        """

    static func parse(_ arguments: [String]) throws(UsageError) -> AppdOptions {
        var options = AppdOptions()
        var rest = arguments[...]
        func value(_ flag: String) throws(UsageError) -> String {
            guard let value = rest.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
            return value
        }
        func integer(_ flag: String) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), number > 0 else {
                throw UsageError(description: "\(flag) needs a positive whole number, not '\(text)'")
            }
            return number
        }
        func seconds(_ flag: String) throws(UsageError) -> Duration {
            let text = try value(flag)
            guard let number = Double(text), number > 0, number.isFinite else {
                throw UsageError(description: "\(flag) needs a positive number of seconds, not '\(text)'")
            }
            return .milliseconds(Int64(number * 1000))
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "-h", "--help": options.showHelp = true
            case "--version": options.showVersion = true
            case "--socket": options.socket = try value(argument)
            case "--data-dir": options.dataDirectory = try value(argument)
            case "--admin-group": options.adminGroup = try value(argument)
            case "--log-level":
                let name = try value(argument)
                guard let level = LogLevel(name: name) else { throw UsageError(description: "unknown log level '\(name)'") }
                options.logLevel = level
            case "--max-message-bytes": options.limits.maxMessageBytes = try integer(argument)
            case "--max-connections": options.limits.maxConnections = try integer(argument)
            case "--max-connections-per-uid": options.limits.maxConnectionsPerUID = try integer(argument)
            case "--max-queued-calls": options.limits.maxQueuedCalls = try integer(argument)
            case "--max-pending-output": options.limits.maxPendingOutputBytes = try integer(argument)
            case "--first-message-timeout": options.limits.firstMessageTimeout = try seconds(argument)
            case "--call-timeout": options.limits.callTimeout = try seconds(argument)
            default:
                throw UsageError(description: "unknown option '\(argument)'")
            }
        }
        do {
            options.limits = try options.limits.validated()
        } catch {
            throw UsageError(description: "\(error)")
        }
        return options
    }
}

func printError(_ message: String) {
    var text = message
    if !text.hasSuffix("\n") { text += "\n" }
    StandardError.write(text)
}

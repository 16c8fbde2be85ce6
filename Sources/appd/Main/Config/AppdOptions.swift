// SPDX-License-Identifier: Apache-2.0
import Bus

/// appd's command line: what to do (help, version, print the config, run) and the flags that
/// override configuration keys.
struct AppdOptions {
    var showHelp = false
    var showVersion = false
    var printConfig = false
    var configFile: String?
    var overrides: [(key: ConfigKey, value: String)] = []

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    static let usage = """
        USAGE: appd [--config <file>] [--print-config] [--socket <path>] [--data-dir <path>] [<options>]
               appd restore <backup> [--config <file>] [--data-dir <path>] [--socket <path>]
        """

    static var help: String {
        var text = """
            OVERVIEW: appd hosts an application's features as plugins on a typed event bus.

            \(usage)

            OPTIONS:
              --config <file>               A JSON file of settings. Default: $APPD_CONFIG; else, when it
                                            exists, /etc/appd/appd.json as root and
                                            $XDG_CONFIG_HOME/appd/appd.json (~/.config/appd/appd.json) as
                                            any other user. The systemd unit passes --config
                                            /etc/appd/appd.json.
              --print-config                Print the effective configuration as JSON and exit.

            SETTINGS (flag, then its key in the config file and its environment variable):

            """
        for key in ConfigKey.all {
            text += "  \(key.flag) <value>".padding(to: 34) + key.help + "\n"
            text += String(repeating: " ", count: 34) + "key \(key.name), env \(key.environment)\n"
        }
        text += """

              --version                     Show the version.
              -h, --help                    Show help information.

            restore <backup> puts a backup (appctl backup create) in place of the data directory's
            database and external plugins' data while appd is stopped: the backup is verified
            first, one made by a newer appd is refused, and the current data is moved aside into
            pre-restore-<time> in the data directory. Exit 0 restored, 65 not a backup that may
            be restored, 69 appd is running there.

            Precedence: built-in defaults < config file < APPD_* environment < flags. An invalid
            setting names the key and exits 78. appd runs in the foreground until SIGINT or
            SIGTERM, finishes in-flight calls and exits 0; SIGHUP reloads the configuration.
            """
        return text
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> AppdOptions {
        var options = AppdOptions()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            let (flag, inline) = split(argument)
            func value() throws(UsageError) -> String {
                if let inline { return inline }
                guard let value = rest.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
                return value
            }
            switch flag {
            case "-h", "--help": options.showHelp = true
            case "--version": options.showVersion = true
            case "--print-config": options.printConfig = true
            case "--config": options.configFile = try value()
            default:
                if let removed = RemovedConfigKey.flagged(flag) { throw UsageError(description: "\(flag) \(removed.reason)") }
                guard let key = ConfigKey.all.first(where: { $0.flag == flag }) else {
                    let flags = ["--config", "--print-config", "--help", "--version"] + ConfigKey.all.map(\.flag)
                    let hint = EditDistance.closest(to: flag, in: flags)
                    throw UsageError(description: "unknown option '\(flag)'" + (hint.map { "\nDid you mean '\($0)'?" } ?? ""))
                }
                options.overrides.append((key, try value()))
            }
        }
        return options
    }

    static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<eq]), String(argument[argument.index(after: eq)...]))
    }
}

extension String {
    func padding(to width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}

func printError(_ message: String) {
    var text = message
    if !text.hasSuffix("\n") { text += "\n" }
    StandardError.write(text)
}

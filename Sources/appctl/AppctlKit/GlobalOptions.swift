// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// Options every subcommand accepts.
struct GlobalOptions {
    var socket: String?
    var json = false
    var timeout: Duration = .seconds(30)
    var help = false
    /// The uid the daemon may run as besides appctl's own and root's.
    var expectUID: UInt32?

    var socketPath: String { SocketPath.resolve(flag: socket) }

    /// The global options that take a value (the word after them is not a subcommand).
    static let valued = ["--socket", "--timeout", "--expect-uid"]
    /// Every global option, for "did you mean" after a typo anywhere on the line.
    static let names = valued + ["--json", "--help"]

    static let help = """
          --socket <path>         The daemon's socket (default: $APPD_SOCKET, else
                                  /run/appd/appd.sock as root, $XDG_RUNTIME_DIR/appd/appd.sock).
          --json                  Machine-readable output: one JSON object per reply.
          --timeout <seconds>     How long to wait for each reply (default: 30).
          --expect-uid <uid>      Also trust a daemon running as this uid (by default appctl
                                  talks only to one running as you or as root).
          -h, --help              Show help information.
        """

    /// Takes the global options out of `arguments` (stopping at `--`), leaving the rest in order.
    /// `reserved` names flags the subcommand claims for itself.
    static func extract(from arguments: [String], reserved: Set<String> = []) throws(AppctlError) -> (GlobalOptions, [String]) {
        var options = GlobalOptions()
        var rest: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                rest.append(contentsOf: arguments[(index - 1)...])
                break
            }
            let (flag, inline) = splitFlag(argument)
            if reserved.contains(flag) {
                rest.append(argument)
                continue
            }
            func value() throws(AppctlError) -> String {
                if let inline { return inline }
                guard index < arguments.count else { throw .usage("\(flag) needs a value", command: nil) }
                index += 1
                return arguments[index - 1]
            }
            switch flag {
            case "--socket": options.socket = try value()
            case "--json": options.json = true
            case "--expect-uid":
                let text = try value()
                guard let uid = UInt32(text) else { throw .usage("--expect-uid needs a numeric uid, not '\(text)'", command: nil) }
                options.expectUID = uid
            case "-h", "--help": options.help = true
            case "--timeout":
                let text = try value()
                guard let seconds = Double(text), seconds > 0, seconds <= 86_400 * 365 else {
                    throw .usage("--timeout needs a positive number of seconds (at most a year), not '\(text)'", command: nil)
                }
                options.timeout = .milliseconds(Int64(seconds * 1000))
            default: rest.append(argument)
            }
        }
        return (options, rest)
    }

    /// `--name=value` → ("--name", "value"); anything else → (argument, nil).
    static func splitFlag(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<eq]), String(argument[argument.index(after: eq)...]))
    }
}

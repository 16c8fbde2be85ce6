// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A command that takes no arguments and calls one method: prints `message` when it has one
/// (and not --json), else the reply with its fields in `order`.
protocol SimpleCall: Leaf {
    static var method: String { get }
    static var message: String? { get }
    static var order: [String] { get }
}

extension SimpleCall {
    static var message: String? { nil }
    static var order: [String] { [] }

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        var reply = try context.call(Self.method)
        if let message = Self.message, !context.options.json {
            print(message)
            return ExitCode.ok
        }
        if !context.options.json, case .object(var members) = reply {
            // People read durations, not float seconds.
            if case .double(let seconds)? = members["uptimeSeconds"] {
                members["uptimeSeconds"] = nil
                members["uptime"] = .string(Output.duration(seconds))
            }
            reply = .object(members)
        }
        context.output.reply(reply, order: Self.order)
        return ExitCode.ok
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct ConsoleLink: Leaf {
    static let path = ["console"]
    static let abstract = "Print a one-time link that signs a browser in to the console (admin)."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        let link = try context.call(ConsoleInterface.CreateLink())
        if context.options.json {
            context.output.reply(["url": .string(link.url), "expiresAt": .string(link.expiresAt)])
        } else {
            print(link.url)
            StandardError.write("works once, until \(link.expiresAt)\n")
        }
        return ExitCode.ok
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct PaymentsWebhook: Leaf {
    static let path = ["payments", "webhook"]
    static let abstract = "Relay one provider delivery as received: the body on standard input, its headers as given."
    @Option("--provider", "name", "revenuecat or stripe.") var provider: String?
    @Option("--header", "K=V", "A header of the delivery; repeat for several.") var header: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let provider else { throw .usage("payments webhook needs --provider (revenuecat or stripe)", command: Self.command) }
        let headers = try Self.headers($header)
        guard !stdinIsTerminal() else { throw .usage("payments webhook reads the body from standard input: appctl payments webhook … < event.json", command: Self.command) }
        guard let body = String(validating: readStandardInput(), as: UTF8.self) else { throw .usage("the body on standard input is not UTF-8", command: Self.command) }
        let ingest = PaymentsInterface.IngestWebhook(provider: provider, headers: headers, body: body)
        if context.options.json {
            context.output.reply(try context.json(ingest))
        } else {
            let reply = try context.call(ingest)
            let id = reply.eventId.escapingControlCharacters()
            print(reply.duplicate ? "duplicate \(id) (already stored; nothing changed)" : "stored \(id)")
            if let warning = reply.warning { StandardError.write("warning: \(warning.escapingControlCharacters())\n") }
        }
        return ExitCode.ok
    }

    /// `--header NAME=VALUE` values as a header map (the last of a name wins).
    static func headers(_ given: [String]) throws(AppctlError) -> [String: String] {
        var headers: [String: String] = [:]
        for header in given {
            guard let eq = header.firstIndex(of: "="), eq != header.startIndex else {
                throw .usage("--header needs NAME=VALUE, got '\(header)'", command: Self.command)
            }
            headers[String(header[..<eq])] = String(header[header.index(after: eq)...])
        }
        return headers
    }
}

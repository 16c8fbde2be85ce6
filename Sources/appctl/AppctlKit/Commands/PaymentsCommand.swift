import BusCore
import Contracts
import Varlink

/// `appctl payments status|products|grant|revoke|user|restore|webhook`. Any other word goes to
/// the commands derived from `io.appd.Payments`.
enum PaymentsCommand {
    static let command = Builtin(
        name: "payments", abstract: "Entitlements and quotas: status, products, restore; admin grant, revoke, user; webhook relay.",
        usage: "payments <status | products | restore | grant EMAIL ENTITLEMENT --reason R [--until T] | revoke EMAIL ENTITLEMENT --reason R | user EMAIL | webhook --provider P [--header K=V]... < BODY>",
        discussion: """
            status, restore: the signed-in user's (needs 'appctl login'). grant, revoke, user: admin only (the daemon's user, root or the admin group); every change is audited with its reason.
            webhook relays one provider delivery exactly as received (body on standard input, headers as given), e.g. from a queue or a test: appctl payments webhook --provider stripe --header "Stripe-Signature=t=…,v1=…" < event.json
            """,
        options: [PaymentsCommand.reason, PaymentsCommand.until, PaymentsCommand.provider, PaymentsCommand.header]
    ) { arguments, context throws(AppctlError) in
        guard let verb = arguments.first else {
            throw .usage("payments needs a verb: status, products, restore, grant, revoke, user, webhook", command: "payments")
        }
        let rest = Array(arguments.dropFirst())
        switch verb {
        case "status", "restore":
            try Flags(rest, command: "payments").noMoreArguments(in: "payments \(verb)")
            return show(verb == "status" ? try context.json(PaymentsInterface.Status()) : try context.json(PaymentsInterface.Restore()), context)
        case "products":
            try Flags(rest, command: "payments").noMoreArguments(in: "payments products")
            if context.options.json { context.output.reply(try context.json(PaymentsInterface.Products())); return ExitCode.ok }
            let reply = try context.call(PaymentsInterface.Products())
            func rows(_ values: [some Encodable]) -> [[String: JSONValue]] { values.compactMap { (try? JSONValue(encoding: $0))?.objectValue } }
            print(Output.table(rows(reply.products), order: ["id", "entitlement", "period"]), terminator: "")
            if !reply.meters.isEmpty {
                print("\nfree quotas:")
                print(Output.table(rows(reply.meters), order: ["name", "limit", "period", "entitlement"]), terminator: "")
            }
            return ExitCode.ok
        case "grant", "revoke":
            let flags = try Flags(rest, accepting: [PaymentsCommand.reason, PaymentsCommand.until, PaymentsCommand.includePaid], command: "payments")
            guard flags.positionals.count == 2 else { throw .usage("payments \(verb) needs EMAIL and ENTITLEMENT", command: "payments") }
            guard let reason = flags.value("--reason") else { throw .usage("payments \(verb) needs --reason (it goes into the audit trail)", command: "payments") }
            let (email, entitlement) = (flags.positionals[0], flags.positionals[1])
            if verb == "revoke", flags.value("--until") != nil { throw .usage("--until is for grant", command: "payments") }
            if verb == "grant", flags.switches.contains("--include-paid") { throw .usage("--include-paid is for revoke", command: "payments") }
            let includePaid = flags.switches.contains("--include-paid")
            let grant = PaymentsInterface.Grant(email: email, entitlement: entitlement, expiresAt: flags.value("--until"), reason: reason)
            let revoke = PaymentsInterface.Revoke(email: email, entitlement: entitlement, reason: reason, includePaid: includePaid ? true : nil)
            if context.options.json {
                context.output.reply(verb == "grant" ? try context.json(grant) : try context.json(revoke))
            } else if verb == "grant" {
                print(line(try context.call(grant).entitlement))
            } else {
                let reply = try context.call(revoke)
                let which = includePaid ? "grant" : "administrator's grant (--include-paid ends a provider's too)"
                print(reply.revoked.isEmpty ? "nothing revoked: no active \(which) of \(entitlement)" : "revoked \(entitlement) from: \(reply.revoked.joined(separator: ", "))")
                print(line(reply.entitlement))
            }
            return ExitCode.ok
        case "user":
            let flags = try Flags(rest, command: "payments")
            guard flags.positionals.count == 1 else { throw .usage("payments user needs one EMAIL", command: "payments") }
            return show(try context.json(PaymentsInterface.UserStatus(email: flags.positionals[0])), context)
        case "webhook":
            let flags = try Flags(rest, accepting: [PaymentsCommand.provider, PaymentsCommand.header], command: "payments")
            guard let provider = flags.value("--provider") else { throw .usage("payments webhook needs --provider (revenuecat or stripe)", command: "payments") }
            var headers: [String: String] = [:]
            for header in flags.values["--header"] ?? [] {
                guard let eq = header.firstIndex(of: "="), eq != header.startIndex else {
                    throw .usage("--header needs NAME=VALUE, got '\(header)'", command: "payments")
                }
                headers[String(header[..<eq])] = String(header[header.index(after: eq)...])
            }
            guard !stdinIsTerminal() else { throw .usage("payments webhook reads the body from standard input: appctl payments webhook … < event.json", command: "payments") }
            guard let body = String(validating: readStandardInput(), as: UTF8.self) else { throw .usage("the body on standard input is not UTF-8", command: "payments") }
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
        default:
            return try DerivedCommand.run(interfaceWord: "payments", arguments, options: context.options)
        }
    }

    /// What `status`, `restore` and `user` show: whichever of these their reply has.
    struct Shown: Decodable {
        var userId: String?
        var entitlements: [Entitlement]?
        var meters: [Meter]?
    }

    /// Entitlements and meters: a line each for people, the reply for scripts.
    static func show(_ reply: JSONValue, _ context: Context) -> Int32 {
        if context.options.json {
            context.output.reply(reply)
            return ExitCode.ok
        }
        guard let shown = try? reply.decode(as: Shown.self) else { return ExitCode.ok }
        if let user = shown.userId { print("user \(user)") }
        for entitlement in shown.entitlements ?? [] { print(line(entitlement)) }
        for meter in shown.meters ?? [] {
            let name = meter.name.escapingControlCharacters()
            if meter.unlimited {
                print("\(name): unlimited (\(meter.entitlement.escapingControlCharacters()))")
            } else {
                print("\(name): \(meter.used) of \(meter.limit) used, resets \(meter.resetsAt)")
            }
        }
        return ExitCode.ok
    }

    static func line(_ entitlement: Entitlement) -> String {
        let name = entitlement.name.escapingControlCharacters()
        guard entitlement.active else { return "\(name): inactive" }
        var parts = ["\(name): active"]
        if let source = entitlement.source { parts.append("from \(source)") }
        if let product = entitlement.product { parts.append("(\(product.escapingControlCharacters()))") }
        if let expires = entitlement.expiresAt {
            parts.append(entitlement.willRenew ? "renews \(expires)" : "until \(expires)")
        } else {
            parts.append("for good")
        }
        return parts.joined(separator: " ")
    }
}

extension PaymentsCommand {
    static let reason = CommandOption("--reason", value: "text", "(grant, revoke) Why; kept in the audit trail.")
    static let until = CommandOption("--until", value: "time", "(grant) When it ends, RFC 3339; default: never.")
    static let includePaid = CommandOption("--include-paid", "(revoke) Also end what a provider granted (by default only an administrator's grant ends).")
    static let provider = CommandOption("--provider", value: "name", "(webhook) revenuecat or stripe.")
    static let header = CommandOption("--header", value: "K=V", "(webhook) A header of the delivery; repeat for several.")
}

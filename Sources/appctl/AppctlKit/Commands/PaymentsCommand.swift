import BusCore
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
            let reply = try context.call(verb == "status" ? "io.appd.Payments.Status" : "io.appd.Payments.Restore")
            return show(reply, context)
        case "products":
            try Flags(rest, command: "payments").noMoreArguments(in: "payments products")
            let reply = try context.call("io.appd.Payments.Products")
            if context.options.json { context.output.reply(reply); return ExitCode.ok }
            if case .array(let products)? = reply["products"] {
                print(Output.table(products.compactMap(\.objectValue), order: ["id", "entitlement", "period"]), terminator: "")
            }
            if case .array(let meters)? = reply["meters"], !meters.isEmpty {
                print("\nfree quotas:")
                print(Output.table(meters.compactMap(\.objectValue), order: ["name", "limit", "period", "entitlement"]), terminator: "")
            }
            return ExitCode.ok
        case "grant", "revoke":
            let flags = try Flags(rest, accepting: [PaymentsCommand.reason, PaymentsCommand.until, PaymentsCommand.includePaid], command: "payments")
            guard flags.positionals.count == 2 else { throw .usage("payments \(verb) needs EMAIL and ENTITLEMENT", command: "payments") }
            guard let reason = flags.value("--reason") else { throw .usage("payments \(verb) needs --reason (it goes into the audit trail)", command: "payments") }
            var parameters: [String: JSONValue] = [
                "email": .string(flags.positionals[0]), "entitlement": .string(flags.positionals[1]), "reason": .string(reason),
            ]
            if verb == "grant", let until = flags.value("--until") { parameters["expiresAt"] = .string(until) }
            if verb == "revoke", flags.value("--until") != nil { throw .usage("--until is for grant", command: "payments") }
            if verb == "grant", flags.switches.contains("--include-paid") { throw .usage("--include-paid is for revoke", command: "payments") }
            if verb == "revoke", flags.switches.contains("--include-paid") { parameters["includePaid"] = true }
            let reply = try context.call(verb == "grant" ? "io.appd.Payments.Grant" : "io.appd.Payments.Revoke", .object(parameters))
            if context.options.json {
                context.output.reply(reply)
            } else {
                if verb == "revoke", case .array(let ended)? = reply["revoked"] {
                    let names = ended.compactMap(\.stringValue)
                    let which = flags.switches.contains("--include-paid") ? "grant" : "administrator's grant (--include-paid ends a provider's too)"
                    print(names.isEmpty ? "nothing revoked: no active \(which) of \(flags.positionals[1])" : "revoked \(flags.positionals[1]) from: \(names.joined(separator: ", "))")
                }
                if let entitlement = reply["entitlement"] { print(line(entitlement)) }
            }
            return ExitCode.ok
        case "user":
            let flags = try Flags(rest, command: "payments")
            guard flags.positionals.count == 1 else { throw .usage("payments user needs one EMAIL", command: "payments") }
            return show(try context.call("io.appd.Payments.UserStatus", ["email": .string(flags.positionals[0])]), context)
        case "webhook":
            let flags = try Flags(rest, accepting: [PaymentsCommand.provider, PaymentsCommand.header], command: "payments")
            guard let provider = flags.value("--provider") else { throw .usage("payments webhook needs --provider (revenuecat or stripe)", command: "payments") }
            var headers: [String: JSONValue] = [:]
            for header in flags.values["--header"] ?? [] {
                guard let eq = header.firstIndex(of: "="), eq != header.startIndex else {
                    throw .usage("--header needs NAME=VALUE, got '\(header)'", command: "payments")
                }
                headers[String(header[..<eq])] = .string(String(header[header.index(after: eq)...]))
            }
            guard !stdinIsTerminal() else { throw .usage("payments webhook reads the body from standard input: appctl payments webhook … < event.json", command: "payments") }
            guard let body = String(validating: readStandardInput(), as: UTF8.self) else { throw .usage("the body on standard input is not UTF-8", command: "payments") }
            let reply = try context.call(
                "io.appd.Payments.IngestWebhook", ["provider": .string(provider), "headers": .object(headers), "body": .string(body)])
            if context.options.json {
                context.output.reply(reply)
            } else {
                print(reply["duplicate"] == .bool(true) ? "duplicate \(Output.scalar(reply["eventId"] ?? "")) (already stored; nothing changed)" : "stored \(Output.scalar(reply["eventId"] ?? ""))")
                if let warning = reply["warning"]?.stringValue { StandardError.write("warning: \(warning.escapingControlCharacters())\n") }
            }
            return ExitCode.ok
        default:
            return try DerivedCommand.run(interfaceWord: "payments", arguments, options: context.options)
        }
    }

    /// Entitlements and meters: a line each for people, the reply for scripts.
    static func show(_ reply: JSONValue, _ context: Context) -> Int32 {
        if context.options.json {
            context.output.reply(reply)
            return ExitCode.ok
        }
        if let user = reply["userId"]?.stringValue { print("user \(user)") }
        if case .array(let entitlements)? = reply["entitlements"] {
            for entitlement in entitlements { print(line(entitlement)) }
        }
        if case .array(let meters)? = reply["meters"] {
            for meter in meters {
                let name = Output.scalar(meter["name"] ?? "")
                if meter["unlimited"] == .bool(true) {
                    print("\(name): unlimited (\(Output.scalar(meter["entitlement"] ?? "")))")
                } else {
                    print("\(name): \(Output.scalar(meter["used"] ?? 0)) of \(Output.scalar(meter["limit"] ?? 0)) used, resets \(Output.scalar(meter["resetsAt"] ?? ""))")
                }
            }
        }
        return ExitCode.ok
    }

    static func line(_ entitlement: JSONValue) -> String {
        let name = Output.scalar(entitlement["name"] ?? "")
        guard entitlement["active"] == .bool(true) else { return "\(name): inactive" }
        var parts = ["\(name): active"]
        if let source = entitlement["source"]?.stringValue { parts.append("from \(source)") }
        if let product = entitlement["product"]?.stringValue { parts.append("(\(product))") }
        if let expires = entitlement["expiresAt"]?.stringValue {
            parts.append(entitlement["willRenew"] == .bool(true) ? "renews \(expires)" : "until \(expires)")
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

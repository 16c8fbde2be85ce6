// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

/// `appctl payments status|products|restore|grant|revoke|user|webhook`. Any other word goes to
/// the commands derived from `io.appd.Payments`.
enum PaymentsGroup {
    static let group = CommandGroup(
        name: "payments", abstract: "Entitlements and quotas: status, products, restore; admin grant, revoke, user; webhook relay.",
        discussion: """
            status, restore: the signed-in user's (needs 'appctl login'). grant, revoke, user: admin only (the daemon's user, root or the admin group); every change is \
            audited with its reason.
            webhook relays one provider delivery exactly as received (body on standard input, headers as given), e.g. from a queue or a test: appctl payments webhook \
            --provider stripe --header "Stripe-Signature=t=…,v1=…" < event.json
            """,
        leaves: [
            PaymentsStatus.self, PaymentsProducts.self, PaymentsRestore.self, PaymentsGrant.self, PaymentsRevoke.self, PaymentsUser.self,
            PaymentsWebhook.self,
        ], derived: true)

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

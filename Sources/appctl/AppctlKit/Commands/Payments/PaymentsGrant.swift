// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PaymentsGrant: Leaf {
    static let path = ["payments", "grant"]
    static let abstract = "Grant an entitlement to an account (admin, audited)."
    @Argument("email", "The account's email.") var email: String?
    @Argument("entitlement", "The entitlement (pro).") var entitlement: String?
    @Option("--reason", "text", "Why; kept in the audit trail.") var reason: String?
    @Option("--until", "time", "When it ends, RFC 3339; default: never.") var until: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let email, let entitlement else { throw .usage("payments grant needs EMAIL and ENTITLEMENT", command: Self.command) }
        guard let reason else { throw .usage("payments grant needs --reason (it goes into the audit trail)", command: Self.command) }
        let grant = PaymentsInterface.Grant(email: email, entitlement: entitlement, expiresAt: until, reason: reason)
        if context.options.json {
            context.output.reply(try context.json(grant))
        } else {
            print(PaymentsGroup.line(try context.call(grant).entitlement))
        }
        return ExitCode.ok
    }
}

// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PaymentsRevoke: Leaf {
    static let path = ["payments", "revoke"]
    static let abstract = "End an administrator's grant of an entitlement (admin, audited)."
    @Argument("email", "The account's email.") var email: String?
    @Argument("entitlement", "The entitlement (pro).") var entitlement: String?
    @Option("--reason", "text", "Why; kept in the audit trail.") var reason: String?
    @Flag("--include-paid", "Also end what a provider granted (by default only an administrator's grant ends).") var includePaid: Bool

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let email, let entitlement else { throw .usage("payments revoke needs EMAIL and ENTITLEMENT", command: Self.command) }
        guard let reason else { throw .usage("payments revoke needs --reason (it goes into the audit trail)", command: Self.command) }
        let revoke = PaymentsInterface.Revoke(email: email, entitlement: entitlement, reason: reason, includePaid: includePaid ? true : nil)
        if context.options.json {
            context.output.reply(try context.json(revoke))
            return ExitCode.ok
        }
        let reply = try context.call(revoke)
        let which = includePaid ? "grant" : "administrator's grant (--include-paid ends a provider's too)"
        print(reply.revoked.isEmpty ? "nothing revoked: no active \(which) of \(entitlement)" : "revoked \(entitlement) from: \(reply.revoked.joined(separator: ", "))")
        print(PaymentsGroup.line(reply.entitlement))
        return ExitCode.ok
    }
}

// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PaymentsUser: Leaf {
    static let path = ["payments", "user"]
    static let abstract = "An account's entitlements and quotas (admin)."
    @Argument("email", "The account's email.") var email: String?

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        guard let email else { throw .usage("payments user needs one EMAIL", command: Self.command) }
        return PaymentsGroup.show(try context.json(PaymentsInterface.UserStatus(email: email)), context)
    }
}

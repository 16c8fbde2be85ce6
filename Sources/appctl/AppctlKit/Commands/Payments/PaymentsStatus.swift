// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PaymentsStatus: Leaf {
    static let path = ["payments", "status"]
    static let abstract = "Your entitlements and free quotas."

    func run(_ context: Context) throws(AppctlError) -> Int32 { PaymentsGroup.show(try context.json(PaymentsInterface.Status()), context) }
}

// SPDX-License-Identifier: Apache-2.0
import Contracts

struct PaymentsRestore: Leaf {
    static let path = ["payments", "restore"]
    static let abstract = "Restore purchases: ask the payment provider what you own."

    func run(_ context: Context) throws(AppctlError) -> Int32 { PaymentsGroup.show(try context.json(PaymentsInterface.Restore()), context) }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts

struct PaymentsProducts: Leaf {
    static let path = ["payments", "products"]
    static let abstract = "The configured products, entitlements and free quotas."

    func run(_ context: Context) throws(AppctlError) -> Int32 {
        if context.options.json {
            context.output.reply(try context.json(PaymentsInterface.Products()))
            return ExitCode.ok
        }
        let reply = try context.call(PaymentsInterface.Products())
        func rows(_ values: [some Encodable]) -> [[String: JSONValue]] { values.compactMap { (try? JSONValue(encoding: $0))?.objectValue } }
        print(Output.table(rows(reply.products), order: ["id", "entitlement", "period"]), terminator: "")
        if !reply.meters.isEmpty {
            print("\nfree quotas:")
            print(Output.table(rows(reply.meters), order: ["name", "limit", "period", "entitlement"]), terminator: "")
        }
        return ExitCode.ok
    }
}

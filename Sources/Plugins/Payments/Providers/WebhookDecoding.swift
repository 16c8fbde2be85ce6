// SPDX-License-Identifier: Apache-2.0
import Contracts
/// Decodes a webhook body as a provider's event without verifying it (for fuzzing and tools;
/// ingestion always verifies first). Throws `MalformedEvent` for anything that is not one.
public enum WebhookDecoding {
    /// What a decoded event would do, in words (stable for tests).
    public static func decode(provider: String, body: [UInt8], catalog: PaymentsCatalog = PaymentsCatalog()) throws(PaymentsError) -> String {
        let decoder: any PaymentProvider
        switch provider {
        case "revenuecat": decoder = RevenueCatProvider(secret: "")
        case "stripe": decoder = StripeProvider(secrets: [])
        default: throw .unknownProvider(provider: provider)
        }
        let event = try decoder.decode(body, catalog: catalog)
        return "\(event.provider) \(event.id) \(event.type) \(event.time) \(event.subject) \(event.actions)"
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts

/// What can be bought and what is metered: products grant entitlements; meters give users
/// without an entitlement a free quota per period. With no configuration: entitlement `pro`,
/// and `chat.messages` at 10 per day without `pro` (the template's free tier).
public struct PaymentsCatalog: Sendable, Equatable {
    public enum Period: String, Sendable, CaseIterable {
        case day, week, month, year, lifetime

        /// Approximate length, for a product whose provider gives no expiry (admin grants
        /// and one-off purchases of a periodic product).
        var nanoseconds: Int64? {
            switch self {
            case .day: 86_400_000_000_000
            case .week: 7 * 86_400_000_000_000
            case .month: 30 * 86_400_000_000_000
            case .year: 365 * 86_400_000_000_000
            case .lifetime: nil
            }
        }
    }

    public struct Product: Sendable, Equatable {
        /// The provider's product id (RevenueCat product id; Stripe price id, lookup key or product id).
        public var id: String
        public var entitlement: String
        public var period: Period
        public init(id: String, entitlement: String, period: Period) {
            self.id = id
            self.entitlement = entitlement
            self.period = period
        }
    }

    public struct Meter: Sendable, Equatable {
        public var name: String
        /// Free uses per period for users without `entitlement`.
        public var limit: Int
        public var period: Period
        /// The entitlement that lifts the quota.
        public var entitlement: String
        public init(name: String, limit: Int, period: Period, entitlement: String) {
            self.name = name
            self.limit = limit
            self.period = period
            self.entitlement = entitlement
        }
    }

    public var products: [Product]
    public var entitlements: [String]
    public var meters: [Meter]

    public init(
        products: [Product] = [
            Product(id: "pro_monthly", entitlement: "pro", period: .month), Product(id: "pro_yearly", entitlement: "pro", period: .year),
            Product(id: "pro_lifetime", entitlement: "pro", period: .lifetime),
        ],
        entitlements: [String] = ["pro"],
        meters: [Meter] = [Meter(name: "chat.messages", limit: 10, period: .day, entitlement: "pro")]
    ) {
        self.products = products
        self.entitlements = Array(Set(entitlements + products.map(\.entitlement) + meters.map(\.entitlement))).sorted()
        self.meters = meters
    }

    public func product(_ id: String) -> Product? { products.first { $0.id == id } }
    public func meter(_ name: String) -> Meter? { meters.first { $0.name == name } }

    /// Parses `id=entitlement/period,…` (e.g. `pro_monthly=pro/month,pro_life=pro/lifetime`).
    public static func parseProducts(_ text: String) throws(CatalogProblem) -> [Product] {
        try items(text).map { item throws(CatalogProblem) in
            let (key, value) = try pair(item, "id=entitlement/period")
            let parts = value.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let period = Period(rawValue: parts[1]) else {
                throw CatalogProblem("'\(item)' needs the form id=entitlement/period with period one of day, week, month, year, lifetime")
            }
            return Product(id: key, entitlement: parts[0], period: period)
        }
    }

    /// Parses `name=limit/period/entitlement,…` (e.g. `chat.messages=10/day/pro`).
    public static func parseMeters(_ text: String) throws(CatalogProblem) -> [Meter] {
        try items(text).map { item throws(CatalogProblem) in
            let (key, value) = try pair(item, "name=limit/period/entitlement")
            let parts = value.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, let limit = Int(parts[0]), limit >= 0, let period = Period(rawValue: parts[1]), period != .lifetime,
                !parts[2].isEmpty
            else {
                throw CatalogProblem("'\(item)' needs the form name=limit/period/entitlement with period one of day, week, month, year")
            }
            return Meter(name: key, limit: limit, period: period, entitlement: parts[2])
        }
    }

    private static func items(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
    }

    private static func pair(_ item: String, _ form: String) throws(CatalogProblem) -> (String, String) {
        guard let eq = item.firstIndex(of: "="), eq != item.startIndex else { throw CatalogProblem("'\(item)' needs the form \(form)") }
        return (String(item[..<eq]), String(item[item.index(after: eq)...]))
    }
}

/// A products or meters setting that does not parse; says what form is expected.
public struct CatalogProblem: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore

/// A webhook delivery's outcome.
public struct Ingested: Codable, Sendable, Equatable {
    public var eventId: String
    public var duplicate: Bool
    /// Set when the event names app user ids no account has: it is stored (a retry is a
    /// duplicate) but changed no entitlement — usually a wrong id in the provider's setup.
    public var warning: String?

    public init(eventId: String, duplicate: Bool, warning: String? = nil) {
        self.eventId = eventId
        self.duplicate = duplicate
        self.warning = warning
    }
}

public struct EntitlementChange: Codable, Sendable, Equatable {
    public var change: String
    public var source: String
    public var product: String?
    public var reference: String?
    public var at: String
    public init(change: String, source: String, product: String? = nil, reference: String? = nil, at: String) {
        self.change = change
        self.source = source
        self.product = product
        self.reference = reference
        self.at = at
    }
}

public struct Entitlement: Codable, Sendable, Equatable {
    public var name: String
    public var active: Bool
    public var source: String?
    public var product: String?
    public var expiresAt: String?
    public var willRenew: Bool
    public var history: [EntitlementChange]
    public init(name: String, active: Bool, source: String? = nil, product: String? = nil, expiresAt: String? = nil, willRenew: Bool, history: [EntitlementChange]) {
        self.name = name
        self.active = active
        self.source = source
        self.product = product
        self.expiresAt = expiresAt
        self.willRenew = willRenew
        self.history = history
    }
}

public struct Meter: Codable, Sendable, Equatable {
    public var name: String
    public var entitlement: String
    public var unlimited: Bool
    public var used: Int
    public var limit: Int
    public var resetsAt: String
    public init(name: String, entitlement: String, unlimited: Bool, used: Int, limit: Int, resetsAt: String) {
        self.name = name
        self.entitlement = entitlement
        self.unlimited = unlimited
        self.used = used
        self.limit = limit
        self.resetsAt = resetsAt
    }
}

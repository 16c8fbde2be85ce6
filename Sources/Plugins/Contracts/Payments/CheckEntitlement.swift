// SPDX-License-Identifier: Apache-2.0
import BusCore

/// An in-process bus command the payments plugin serves: whether the user holds an active
/// entitlement now. Chat checks a model's entitlement this way.
public struct CheckEntitlement: Command {
    public static let method = "io.appd.Payments.CheckEntitlement"
    public typealias Reply = Answer

    public var userID: String
    public var entitlement: String

    public init(userID: String, entitlement: String) {
        self.userID = userID
        self.entitlement = entitlement
    }

    public struct Answer: Codable, Sendable, Equatable {
        public var entitled: Bool
        public init(entitled: Bool) { self.entitled = entitled }
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore

/// An in-process bus command the auth plugin serves (it is in no IDL, so no client can call
/// it): finds an account by email or by id. Payments uses it to turn an admin's `email` or a
/// provider's app user id into an account without reaching into auth's tables.
public struct LookupAccount: Command {
    public static let method = "io.appd.Auth.LookupAccount"
    public typealias Reply = Found

    public var email: String?
    public var userID: String?

    public init(email: String? = nil, userID: String? = nil) {
        self.email = email
        self.userID = userID
    }

    /// The account, or nil when there is none.
    public struct Found: Codable, Sendable, Equatable {
        public var userID: String?
        public var email: String?
        public init(userID: String?, email: String?) {
            self.userID = userID
            self.email = email
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore

/// The administrators' methods of `io.appd.Auth` (appctl users, the console).
extension AuthInterface {
    public struct ListUsers: Command {
        public static let method = "io.appd.Auth.ListUsers"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = UserPage
        public var cursor: String?
        public var limit: Int?
        /// Only accounts whose email contains this text (any case).
        public var search: String?
        public init(cursor: String? = nil, limit: Int? = nil, search: String? = nil) {
            self.cursor = cursor
            self.limit = limit
            self.search = search
        }
    }

    public struct UserPage: Codable, Sendable {
        public var users: [AccountSummary]
        public var nextCursor: String?
        public init(users: [AccountSummary], nextCursor: String? = nil) {
            self.users = users
            self.nextCursor = nextCursor
        }
    }

    public struct GetUser: Command {
        public static let method = "io.appd.Auth.GetUser"
        public static let requirements: [Requirement] = [.admin]
        public typealias Reply = UserDetail
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }

    /// An account as an administrator sees it, with its linked identities.
    public struct UserDetail: Codable, Sendable {
        public var user: AccountSummary
        public var identities: [Identity]
        public init(user: AccountSummary, identities: [Identity]) {
            self.user = user
            self.identities = identities
        }
    }

    public struct DisableUser: Command {
        public static let method = "io.appd.Auth.DisableUser"
        public static let requirements: [Requirement] = [.admin, .idempotent]
        public typealias Reply = Empty
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }

    public struct EnableUser: Command {
        public static let method = "io.appd.Auth.EnableUser"
        public static let requirements: [Requirement] = [.admin, .idempotent]
        public typealias Reply = Empty
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }

    public struct DeleteUser: Command {
        public static let method = "io.appd.Auth.DeleteUser"
        public static let requirements: [Requirement] = [.admin, .idempotent]
        public typealias Reply = Empty
        public var email: String
        public init(email: String) {
            self.email = email
        }
    }
}

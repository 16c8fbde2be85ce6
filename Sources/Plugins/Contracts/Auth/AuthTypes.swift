// SPDX-License-Identifier: Apache-2.0
/// An account as its owner sees it.
public struct User: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var email: String
    public var displayName: String?
    public var onboarded: Bool
    public var emailVerified: Bool
    public var guest: Bool
    /// The profile picture (`SetAvatar`), a file of `io.appd.Files`.
    public var avatarFileId: String?
    public var createdAt: String
    public init(
        id: String, email: String, displayName: String? = nil, onboarded: Bool, emailVerified: Bool, guest: Bool, avatarFileId: String? = nil, createdAt: String
    ) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.onboarded = onboarded
        self.emailVerified = emailVerified
        self.guest = guest
        self.avatarFileId = avatarFileId
        self.createdAt = createdAt
    }
}

/// An Apple or Google identity linked to an account.
public struct Identity: Codable, Sendable, Hashable, Identifiable {
    public var provider: String
    public var email: String?
    public var emailForwarding: Bool
    public var linkedAt: String
    public init(provider: String, email: String? = nil, emailForwarding: Bool, linkedAt: String) {
        self.provider = provider
        self.email = email
        self.emailForwarding = emailForwarding
        self.linkedAt = linkedAt
    }
    /// An account has one identity per provider.
    public var id: String { provider }
}

/// The tokens of a session, returned once.
public struct Session: Codable, Sendable, Hashable {
    public var accessToken: String
    public var refreshToken: String
    public var expiresAt: String
    public var user: User
    public init(accessToken: String, refreshToken: String, expiresAt: String, user: User) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.user = user
    }
}

/// An account as an administrator sees it.
public struct AccountSummary: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var email: String
    public var displayName: String?
    public var onboarded: Bool
    public var disabled: Bool
    public var guest: Bool
    public var createdAt: String
    public init(id: String, email: String, displayName: String? = nil, onboarded: Bool, disabled: Bool, guest: Bool, createdAt: String) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.onboarded = onboarded
        self.disabled = disabled
        self.guest = guest
        self.createdAt = createdAt
    }
}

/// An account as its owner sees it.
public struct User: Codable, Sendable, Equatable {
    public var id: String
    public var email: String
    public var displayName: String?
    public var onboarded: Bool
    public var emailVerified: Bool
    public var guest: Bool
    public var createdAt: String
}

/// An Apple or Google identity linked to an account.
public struct Identity: Codable, Sendable, Equatable {
    public var provider: String
    public var email: String?
    public var emailForwarding: Bool
    public var linkedAt: String
}

/// The tokens of a session, returned once.
public struct Session: Codable, Sendable {
    public var accessToken: String
    public var refreshToken: String
    public var expiresAt: String
    public var user: User
}

/// An account as an administrator sees it.
public struct AccountSummary: Codable, Sendable, Equatable {
    public var id: String
    public var email: String
    public var displayName: String?
    public var onboarded: Bool
    public var disabled: Bool
    public var guest: Bool
    public var createdAt: String
}

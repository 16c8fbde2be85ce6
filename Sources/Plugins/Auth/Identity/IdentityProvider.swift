// SPDX-License-Identifier: Apache-2.0
import Contracts

/// The identity providers whose ID tokens appd verifies (OpenID Connect, RS256-signed JWTs).
public enum IdentityProvider: String, Sendable, CaseIterable, Hashable {
    case apple
    case google

    /// Every `iss` the provider signs with: Apple moved to account.apple.com and still uses
    /// appleid.apple.com; Google's tokens carry either form of its host.
    var issuers: Set<String> {
        switch self {
        case .apple: ["https://appleid.apple.com", "https://account.apple.com"]
        case .google: ["https://accounts.google.com", "accounts.google.com"]
        }
    }

    /// Where the provider publishes its signing keys (a JWK set).
    public var defaultKeysURL: String {
        switch self {
        case .apple: "https://appleid.apple.com/auth/keys"
        case .google: "https://www.googleapis.com/oauth2/v3/certs"
        }
    }
}

/// One provider's settings. A provider with no audience is off: its tokens are refused with
/// ProviderNotConfigured.
public struct IdentityProviderSettings: Sendable, Equatable {
    /// The client ids the app's tokens are issued to: Apple — the iOS bundle id and any web
    /// Services ID; Google — the iOS and web OAuth client ids. A token's `aud` must be one of them.
    public var audiences: [String] = []
    /// The provider's JWK set (HTTPS; the default is the provider's own).
    public var keysURL: String
    /// Whether the nonce is checked: the token's `nonce` must be the SHA-256 (lowercase hex)
    /// of the raw nonce the app sends, or both must be absent. Google's iOS SDK sets a nonce
    /// of its own that the app never sees: turn this off for Google when the app uses that SDK.
    public var checkNonce = true
    /// Google: the Workspace domains (`hd`) allowed to sign in; empty allows every account.
    public var hostedDomains: [String] = []

    public init(provider: IdentityProvider) { keysURL = provider.defaultKeysURL }

    public var enabled: Bool { !audiences.isEmpty }
}

/// Apple's server side: with these, appd exchanges the authorization code an app sends at
/// sign-in for Apple's refresh token (kept sealed), and revokes it when the account is deleted
/// or the identity unlinked (App Store guideline 5.1.1(v)).
public struct AppleServerSettings: Sendable, Equatable {
    /// The Apple Developer team id (the client secret's `iss`).
    public var teamID: String
    /// The Sign in with Apple key's id (the client secret's `kid`).
    public var keyID: String
    /// The private key (`AuthKey_<keyID>.p8`, PEM). Never logged or printed.
    public var privateKeyPEM: String
    /// The client id codes are issued to: the app's bundle id (the first Apple audience by default).
    public var clientID: String
    public var tokenURL = "https://appleid.apple.com/auth/token"
    public var revokeURL = "https://appleid.apple.com/auth/revoke"

    public init(teamID: String, keyID: String, privateKeyPEM: String, clientID: String) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.clientID = clientID
    }
}

/// How ID tokens are verified: per-provider settings and the key cache's bounds.
public struct IdentityOptions: Sendable, Equatable {
    public var apple = IdentityProviderSettings(provider: .apple)
    public var google = IdentityProviderSettings(provider: .google)
    /// Trusted CA certificates (PEM) for the key URLs instead of the system store.
    public var caFile: String?
    /// Clock difference allowed on `exp`, `iat` and `nbf`.
    public var leeway: Duration = .seconds(60)
    /// How long a key set is used when its response gives no `Cache-Control: max-age`.
    public var defaultKeyLifetime: Duration = .seconds(3600)
    /// The least time between two fetches of one provider's keys (a token naming an unknown
    /// key id fetches again, but a stream of forged key ids cannot make appd hammer the provider).
    public var minimumRefetchInterval: Duration = .seconds(5)
    /// How long past its expiry the last good key set is still used while the provider's key
    /// URL fails; after that, sign-ins with that provider fail closed (IdentityProviderUnavailable).
    public var maximumKeyStaleness: Duration = .seconds(24 * 3600)
    /// A key fetch's time limit.
    public var fetchTimeout: Duration = .seconds(10)
    /// How recent a session's sign-in must be for DeleteAccount without a password.
    public var reauthenticationWindow: Duration = .seconds(300)
    /// Apple's token and revoke endpoints (nil: no code exchange, nothing to revoke).
    public var appleServer: AppleServerSettings?
    /// The AES-256 key that seals providers' refresh tokens at rest (32 bytes; kept out of the
    /// database). Needed with `appleServer`.
    public var tokenEncryptionKey: [UInt8]?
    /// How often queued token revocations are looked at (each is retried with backoff).
    public var revocationInterval: Duration = .seconds(1)

    public init() {}

    public subscript(_ provider: IdentityProvider) -> IdentityProviderSettings {
        get { provider == .apple ? apple : google }
        set {
            if provider == .apple { apple = newValue } else { google = newValue }
        }
    }
}

extension AuthError {
    static func identityProviderUnavailable(_ provider: IdentityProvider) -> AuthError { .identityProviderUnavailable(provider: provider.rawValue) }
    var isIdentityProviderUnavailable: Bool {
        if case .identityProviderUnavailable = self { true } else { false }
    }
}

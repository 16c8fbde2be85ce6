// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import PluginKit

/// Who an ID token says the user is, once every check has passed.
struct VerifiedIdentity: Sendable, Equatable {
    var provider: IdentityProvider
    /// The provider's stable id for the user (`sub`).
    var subject: String
    /// The email the provider gives (normalised), if any.
    var email: String?
    /// Whether the provider vouches for the email. Apple's relay addresses are real and verified.
    var emailVerified: Bool
    var isPrivateEmail: Bool
}

/// Checks an ID token from Sign in with Apple or Google Sign-In (OpenID Connect Core §3.1.3.7):
/// the signature with the provider's published keys and only the algorithm the key names; the
/// issuer; the audience (and Google's `azp`) against the configured client ids; `exp`, `iat`
/// and `nbf` within the leeway; the nonce; Google's hosted domain. Each refusal says which
/// check failed (InvalidIdToken's reason).
struct IdTokenVerifier: Sendable {
    let options: IdentityOptions
    private let keys: [IdentityProvider: PublishedKeys]

    init(options: IdentityOptions, fetch: PublishedKeys.Fetch? = nil) {
        self.options = options
        let fetch = fetch ?? PublishedKeys.https(caFile: options.caFile, timeout: options.fetchTimeout)
        var keys: [IdentityProvider: PublishedKeys] = [:]
        for provider in IdentityProvider.allCases where options[provider].enabled {
            var settings = PublishedKeys.Settings(url: options[provider].keysURL)
            settings.defaultLifetime = options.defaultKeyLifetime
            settings.minimumRefetchInterval = options.minimumRefetchInterval
            settings.maximumStaleness = options.maximumKeyStaleness
            settings.fetchTimeout = options.fetchTimeout
            keys[provider] = PublishedKeys(provider.rawValue, settings: settings, fetch: fetch, logger: Logger(label: "appd.auth"))
        }
        self.keys = keys
    }

    /// The identity in `token`, or the reason it is refused. `rawNonce` is the nonce the app
    /// generated; the token must carry its SHA-256 in lowercase hex.
    func verify(_ token: String, provider: IdentityProvider, rawNonce: String?, now: Int64) async throws(AuthError) -> VerifiedIdentity {
        let claims = try await signedClaims(token, provider: provider, now: now)
        return try check(claims, provider: provider, settings: options[provider], rawNonce: rawNonce, now: now)
    }

    /// The claims of a JWS the provider signed: parsed strictly, then verified with the
    /// provider's key of the token's key id, with only the algorithm that key names.
    private func signedClaims(_ text: String, provider: IdentityProvider, now: Int64) async throws(AuthError) -> [String: JSONValue] {
        guard options[provider].enabled, let keys = keys[provider] else { throw AuthError.providerNotConfigured(provider: provider.rawValue) }
        let jws: CompactJWS
        let claims: [String: JSONValue]
        do {
            jws = try CompactJWS(text)
            claims = try jws.claims()
        } catch {
            throw Self.refusal(error)
        }
        // Before any key is fetched: only the algorithms a provider key can name get that far.
        guard jws.algorithm == "RS256" || jws.algorithm == "ES256" else { throw AuthError.invalidIdToken(reason: .algorithm) }
        let key: JSONWebKey
        do {
            key = try await keys.key(for: jws, now: now)
        } catch {
            switch error {
            case .unavailable: throw AuthError.identityProviderUnavailable(provider)
            case .unknownKey: throw AuthError.invalidIdToken(reason: .unknownKey)
            }
        }
        do {
            try key.verify(jws)
        } catch {
            throw Self.refusal(error)
        }
        return claims
    }

    /// The claims of a notification Apple signed (a server-to-server notification's payload):
    /// the signature with Apple's keys, the issuer, the audience. No nonce or expiry: Apple
    /// redelivers old ones, and each acts once (the caller records which it handled).
    func verifyAppleNotification(_ text: String, now: Int64) async throws(AuthError) -> [String: JSONValue] {
        let claims = try await signedClaims(text, provider: .apple, now: now)
        guard let issuer = claims["iss"]?.stringValue, IdentityProvider.apple.issuers.contains(issuer) else { throw AuthError.invalidIdToken(reason: .issuer) }
        guard let audience = claims["aud"]?.stringValue, options.apple.audiences.contains(audience) else { throw AuthError.invalidIdToken(reason: .audience) }
        return claims
    }

    /// The claim checks, after the signature has verified.
    func check(
        _ claims: [String: JSONValue], provider: IdentityProvider, settings: IdentityProviderSettings, rawNonce: String?, now: Int64
    ) throws(AuthError) -> VerifiedIdentity {
        guard let issuer = claims["iss"]?.stringValue, provider.issuers.contains(issuer) else { throw AuthError.invalidIdToken(reason: .issuer) }
        // aud: one client id, or a list of them (then azp names the one it was issued to).
        let audiences: [String]
        switch claims["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let many)?: audiences = many.compactMap(\.stringValue)
        default: throw AuthError.invalidIdToken(reason: .audience)
        }
        let accepted = Set(settings.audiences)
        guard audiences.contains(where: accepted.contains) else { throw AuthError.invalidIdToken(reason: .audience) }
        if let azp = claims["azp"] {
            guard let party = azp.stringValue, accepted.contains(party) else { throw AuthError.invalidIdToken(reason: .authorizedParty) }
        } else if audiences.count > 1 {
            throw AuthError.invalidIdToken(reason: .authorizedParty)
        }
        let leeway = options.leeway.nanoseconds / 1_000_000_000
        let seconds = now / 1_000_000_000
        guard let expires = Self.time(claims["exp"]) else { throw AuthError.invalidIdToken(reason: .expired) }
        guard seconds < expires + leeway else { throw AuthError.invalidIdToken(reason: .expired) }
        guard let issuedAt = Self.time(claims["iat"]), issuedAt <= seconds + leeway else { throw AuthError.invalidIdToken(reason: .issuedInFuture) }
        if let notBefore = claims["nbf"] {
            guard let nbf = Self.time(notBefore), nbf <= seconds + leeway else { throw AuthError.invalidIdToken(reason: .notYetValid) }
        }
        try checkNonce(claims["nonce"], rawNonce: rawNonce, check: settings.checkNonce)
        if !settings.hostedDomains.isEmpty {
            guard let domain = claims["hd"]?.stringValue, settings.hostedDomains.contains(domain.lowercased()) else {
                throw AuthError.invalidIdToken(reason: .hostedDomain)
            }
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= 255, !subject.containsControlCharacters else {
            throw AuthError.invalidIdToken(reason: .subject)
        }
        let email = claims["email"]?.stringValue.flatMap { try? AuthValidation.email($0) }
        return VerifiedIdentity(
            provider: provider, subject: subject, email: email,
            emailVerified: email != nil && Self.flag(claims["email_verified"]), isPrivateEmail: Self.flag(claims["is_private_email"]))
    }

    /// Both present and matching, or both absent (OpenID Connect: a nonce the client sent
    /// must come back hashed; a token bound to a nonce the caller cannot show, or a caller's
    /// nonce the token lacks, is a replay or a mix-up). Skipped when `check` is off (Google's
    /// iOS SDK puts in a nonce of its own that the app never sees).
    private func checkNonce(_ claim: JSONValue?, rawNonce: String?, check: Bool) throws(AuthError) {
        guard check else { return }
        switch (claim, rawNonce) {
        case (nil, nil):
            return
        case (.string(let hashed)?, let raw?):
            let expected = Digest.sha256(Array(raw.utf8)).map { byte in String(byte, radix: 16).leftPadded(to: 2) }.joined()
            guard Digest.constantTimeEqual(Array(hashed.utf8), Array(expected.utf8)) else { throw AuthError.invalidIdToken(reason: .nonceMismatch) }
        case (_?, nil), (nil, _?):
            throw AuthError.invalidIdToken(reason: .nonceMissing)
        case (_?, _?):
            throw AuthError.invalidIdToken(reason: .nonceMismatch)
        }
    }

    /// A NumericDate (seconds; JSON number, whole or not).
    private static func time(_ value: JSONValue?) -> Int64? {
        switch value {
        case .int(let n)?: n
        case .double(let d)? where d.isFinite && abs(d) < 1e15: Int64(d)
        default: nil
        }
    }

    /// Apple sends `email_verified` and `is_private_email` as the strings "true"/"false";
    /// Google as booleans.
    private static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let b)?: b
        case .string(let s)?: s.lowercased() == "true"
        default: false
        }
    }

    private static func refusal(_ error: JOSEError) -> AuthError {
        switch error {
        case .malformed: AuthError.invalidIdToken(reason: .malformed)
        case .algorithm: AuthError.invalidIdToken(reason: .algorithm)
        case .unknownKey: AuthError.invalidIdToken(reason: .unknownKey)
        case .signature: AuthError.invalidIdToken(reason: .signature)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP
import PluginKit

/// Checks that a Pub/Sub push (Google Play's real-time developer notifications) comes from
/// Google: its `Authorization: Bearer` is an OpenID token Google signed (RS256, a key from
/// Google's published set), issued by `accounts.google.com` for the push subscription's
/// audience, unexpired, and — when set — naming the push's service account with a verified
/// email. Google's keys are kept by `PublishedKeys` (as sign-in's are).
struct GooglePushVerifier: Sendable {
    let audience: String
    /// The service account the push subscription authenticates as (nil: any Google account).
    let serviceAccount: String?
    let keys: PublishedKeys
    let clock: @Sendable () -> WallTime

    static let defaultKeysURL = "https://www.googleapis.com/oauth2/v3/certs"
    static let skew: Int64 = 60 * 1_000_000_000

    init(audience: String, serviceAccount: String?, keysURL: String, caFile: String?, clock: @escaping @Sendable () -> WallTime) {
        self.audience = audience
        self.serviceAccount = serviceAccount
        self.clock = clock
        keys = PublishedKeys(
            "google play pushes", settings: PublishedKeys.Settings(url: keysURL), fetch: PublishedKeys.https(caFile: caFile, timeout: .seconds(10)),
            logger: Logger(label: "appd.payments"))
    }

    /// Throws `InvalidSignature` with the reason unless `authorization` is Google's token for this push.
    func verify(authorization: String?) async throws(PaymentsError) {
        guard let authorization, authorization.hasPrefix("Bearer ") else { throw .invalidSignature(reason: "no Authorization: Bearer token") }
        let jws: CompactJWS
        do {
            jws = try CompactJWS(String(authorization.dropFirst(7)))
        } catch {
            throw .invalidSignature(reason: "the push's token is not a JWT (\(error))")
        }
        guard jws.algorithm == "RS256" else { throw .invalidSignature(reason: "the push's token is \(jws.algorithm), not RS256") }
        let key: JSONWebKey
        do {
            key = try await keys.key(for: jws, now: clock().nanosecondsSinceEpoch)
        } catch {
            switch error {
            case .unavailable: throw .providerUnavailable(provider: "googleplay", reason: "Google's signing keys cannot be fetched")
            case .unknownKey: throw .invalidSignature(reason: "the push's token names a key Google does not publish")
            }
        }
        do {
            try key.verify(jws)
        } catch {
            throw .invalidSignature(reason: "the push's token does not verify with Google's key (\(error))")
        }
        guard let claims = try? jws.claims() else { throw .invalidSignature(reason: "the push's token has no claims") }
        let now = clock().nanosecondsSinceEpoch
        guard let issuer = claims["iss"]?.stringValue, issuer == "accounts.google.com" || issuer == "https://accounts.google.com" else {
            throw .invalidSignature(reason: "the push's token is not issued by Google")
        }
        guard claims["aud"]?.stringValue == audience else { throw .invalidSignature(reason: "the push's token is for another audience (googlePlayPushAudience)") }
        guard case .int(let expires)? = claims["exp"], expires * 1_000_000_000 + Self.skew > now else {
            throw .invalidSignature(reason: "the push's token has expired")
        }
        if case .int(let issued)? = claims["iat"], issued * 1_000_000_000 > now + Self.skew { throw .invalidSignature(reason: "the push's token is issued in the future") }
        if let serviceAccount {
            guard claims["email"]?.stringValue == serviceAccount, claims["email_verified"] == .bool(true) else {
                throw .invalidSignature(reason: "the push's token names another account (googlePlayPushServiceAccount)")
            }
        }
    }
}

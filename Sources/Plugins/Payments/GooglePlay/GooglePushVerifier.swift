// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP

/// Checks that a Pub/Sub push (Google Play's real-time developer notifications) comes from
/// Google: its `Authorization: Bearer` is an OpenID token Google signed (RS256, a key from
/// Google's published set), issued by `accounts.google.com` for the push subscription's
/// audience, unexpired, and — when set — naming the push's service account with a verified
/// email. Google's keys are cached for as long as Google says (`max-age`), fetched again for a
/// key id the set lacks (at most once a minute); without a usable set it fails closed.
actor GooglePushVerifier {
    let audience: String
    /// The service account the push subscription authenticates as (nil: any Google account).
    let serviceAccount: String?
    let keysURL: String
    let caFile: String?
    let clock: @Sendable () -> WallTime

    private var keys: JSONWebKeySet?
    private var keysExpireAt: Int64 = 0
    private var lastFetch: Int64?

    static let defaultKeysURL = "https://www.googleapis.com/oauth2/v3/certs"
    static let skew: Int64 = 60 * 1_000_000_000

    init(audience: String, serviceAccount: String?, keysURL: String, caFile: String?, clock: @escaping @Sendable () -> WallTime) {
        self.audience = audience
        self.serviceAccount = serviceAccount
        self.keysURL = keysURL
        self.caFile = caFile
        self.clock = clock
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
        let key = try await key(id: jws.keyID)
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

    private func key(id: String?) async throws(PaymentsError) -> JSONWebKey {
        let now = clock().nanosecondsSinceEpoch
        if let keys, now < keysExpireAt, let key = keys.key(id: id) { return key }
        if lastFetch.map({ now - $0 >= 60_000_000_000 }) ?? true {
            lastFetch = now
            await fetch(now: now)
        }
        guard let keys else { throw .providerUnavailable(provider: "googleplay", reason: "Google's signing keys cannot be fetched from \(keysURL)") }
        guard let key = keys.key(id: id) else { throw .invalidSignature(reason: "the push's token names a key Google does not publish") }
        return key
    }

    /// Fetches Google's key set; a failure keeps the last good one.
    private func fetch(now: Int64) async {
        guard var request = HTTPRequest(url: keysURL) else { return }
        request.method = "GET"
        guard let (head, body) = try? await HTTPClient.oneShot(limit: .seconds(10), caFile: caFile, maxResponseBytes: 256 * 1024).fetch(request),
            head.status == 200, let set = try? JSONWebKeySet(parsing: body)
        else { return }
        keys = set
        var lifetime: Int64 = 3600
        if let control = head.headers["cache-control"], let range = control.firstRange(of: "max-age=") {
            lifetime = Int64(control[range.upperBound...].prefix { $0.isNumber }) ?? lifetime
        }
        keysExpireAt = now + min(lifetime, 86_400) * 1_000_000_000
    }
}

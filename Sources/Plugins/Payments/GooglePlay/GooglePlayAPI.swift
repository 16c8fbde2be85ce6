// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP

/// A Google service account's key (the JSON file Google Cloud gives: `client_email`,
/// `private_key`, `token_uri`).
struct GoogleServiceAccount: Sendable {
    var email: String
    var key: RSAPrivateKey
    var tokenURI: String

    init(json text: String) throws(PaymentsError) {
        guard let value = try? JSONParser.parse(Array(text.utf8), maxDepth: 8), value.objectValue != nil else {
            throw .validation("googlePlayServiceAccountFile", "is not a JSON service account key")
        }
        guard let email = value.string("client_email"), let pem = value.string("private_key") else {
            throw .validation("googlePlayServiceAccountFile", "has no client_email or private_key")
        }
        do {
            key = try RSAPrivateKey(pem: pem)
        } catch {
            throw .validation("googlePlayServiceAccountFile", "private_key: \(error)")
        }
        self.email = email
        tokenURI = value.string("token_uri") ?? "https://oauth2.googleapis.com/token"
    }
}

/// The Google Play Developer API, as a service account: an access token from Google's token
/// endpoint (an RS256 assertion, RFC 7523), kept until shortly before it expires; then
/// `purchases.subscriptionsv2.get`, `purchases.products.get` and their `acknowledge`.
/// Bounded: a timeout per request, a few tries with growing pauses when Google fails or throttles.
actor GooglePlayAPI {
    let account: GoogleServiceAccount
    let packageName: String
    /// `https://androidpublisher.googleapis.com` or a proxy or test server.
    let baseURL: String
    let caFile: String?
    let clock: @Sendable () -> WallTime
    /// Timeout and tries per request.
    let asking: StoreRequest

    private var accessToken: (value: String, expiresAt: Int64)?

    static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let defaultURL = "https://androidpublisher.googleapis.com"

    init(account: GoogleServiceAccount, packageName: String, baseURL: String, caFile: String?, clock: @escaping @Sendable () -> WallTime) {
        self.account = account
        self.packageName = packageName
        self.baseURL = baseURL
        self.caFile = caFile
        self.clock = clock
        asking = StoreRequest(caFile: caFile, maxResponseBytes: 1 << 20)
    }

    /// A subscription purchase (`SubscriptionPurchaseV2`); nil when Google knows no such token.
    func subscription(token: String) async throws(PaymentsError) -> JSONValue? {
        try await send("GET", "/androidpublisher/v3/applications/\(segment(packageName))/purchases/subscriptionsv2/tokens/\(segment(token))")
    }

    /// A one-time product purchase (`ProductPurchase`); nil when Google knows no such token.
    func product(_ productID: String, token: String) async throws(PaymentsError) -> JSONValue? {
        try await send("GET", "/androidpublisher/v3/applications/\(segment(packageName))/purchases/products/\(segment(productID))/tokens/\(segment(token))")
    }

    /// Acknowledges a purchase (Google refunds one left unacknowledged for three days).
    func acknowledge(productID: String, token: String, subscription: Bool) async throws(PaymentsError) {
        let kind = subscription ? "subscriptions" : "products"
        _ = try await send(
            "POST", "/androidpublisher/v3/applications/\(segment(packageName))/purchases/\(kind)/\(segment(productID))/tokens/\(segment(token)):acknowledge",
            body: Array("{}".utf8))
    }

    private func segment(_ text: String) -> String { RevenueCatAPI.pathSegment(text) }

    /// An access token for the Play scope, from the cache or Google's token endpoint.
    private func token() async throws(PaymentsError) -> String {
        let now = clock().nanosecondsSinceEpoch
        if let accessToken, accessToken.expiresAt - 60_000_000_000 > now { return accessToken.value }
        let issued = now / 1_000_000_000
        let assertion: String
        do {
            assertion = try CompactJWS.signRS256(
                header: ["typ": "JWT"],
                claims: ["iss": .string(account.email), "scope": .string(Self.scope), "aud": .string(account.tokenURI), "iat": .int(issued), "exp": .int(issued + 3600)],
                key: account.key)
        } catch {
            throw .providerUnavailable(provider: "googleplay", reason: "cannot sign the token request (\(error))")
        }
        guard var request = HTTPRequest(url: account.tokenURI) else {
            throw .providerUnavailable(provider: "googleplay", reason: "the service account's token_uri is not an http(s) URL")
        }
        request.headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
        request.body = Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)
        let answer = try await fetch(request, what: "Google's token endpoint")
        guard let answer, let value = answer.string("access_token") else {
            throw .providerUnavailable(provider: "googleplay", reason: "Google's token endpoint gave no access_token: check googlePlayServiceAccountFile")
        }
        let lifetime = answer.int("expires_in") ?? 3600
        accessToken = (value, now + lifetime * 1_000_000_000)
        return value
    }

    private func send(_ method: String, _ path: String, body: [UInt8] = []) async throws(PaymentsError) -> JSONValue? {
        guard var request = HTTPRequest(url: baseURL, appending: path) else {
            throw .providerUnavailable(provider: "googleplay", reason: "googlePlayApiUrl is not an http(s) URL")
        }
        request.method = method
        request.body = body
        request.headers = [("Authorization", "Bearer " + (try await token())), ("Accept", "application/json")]
        if !body.isEmpty { request.headers.append(("Content-Type", "application/json")) }
        return try await fetch(request, what: "the Play Developer API")
    }

    /// One request, tried again while Google fails or throttles; nil for 404, an empty object
    /// for an empty 2xx body.
    private func fetch(_ request: HTTPRequest, what: String) async throws(PaymentsError) -> JSONValue? {
        switch try await asking.send({ request }) {
        case .gaveUp(let reason):
            throw .providerUnavailable(provider: "googleplay", reason: "\(what) could not be asked (\(reason))")
        case .answered(let head, let body):
            switch head.status {
            case 200...299:
                if body.isEmpty { return .object([:]) }
                guard let value = try? JSONParser.parse(body, maxDepth: 32), value.objectValue != nil else {
                    throw .providerUnavailable(provider: "googleplay", reason: "\(what) answered something that is not a JSON object")
                }
                return value
            case 404, 410:
                return nil
            case 400, 401, 403:
                throw .providerUnavailable(
                    provider: "googleplay",
                    reason:
                        "\(what) refused the request (HTTP \(head.status)): check googlePlayServiceAccountFile, googlePlayPackageName and the account's Play Console permissions")
            default:
                throw .providerUnavailable(provider: "googleplay", reason: "\(what) answered HTTP \(head.status)")
            }
        }
    }
}

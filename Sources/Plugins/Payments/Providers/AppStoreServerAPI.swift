// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP

/// The App Store Server API, for "Restore purchases" without a middleman: `Get Transaction
/// History` (`GET /inApps/v2/history/{transactionId}`, paginated by `revision`), authorized by
/// the ES256 JWT Apple specifies (a key made in App Store Connect: issuer id, key id, the `.p8`;
/// audience `appstoreconnect-v1`, the bundle id). Bounded: a timeout per request, a few tries
/// with growing pauses when Apple fails or throttles, a page and byte limit per history.
struct AppStoreServerAPI: Sendable {
    var issuerID: String
    var keyID: String
    var key: P256PrivateKey
    var bundleID: String
    /// `https://api.storekit.itunes.apple.com` (Production), `https://api.storekit-sandbox.itunes.apple.com`
    /// (Sandbox), or a proxy or test server.
    var baseURL: String
    var caFile: String?
    /// Timeout and tries per request.
    var asking = StoreRequest()
    /// Pages of one purchase's history at most (Apple sends up to 20 transactions a page).
    var maxPages = 50

    static let production = "https://api.storekit.itunes.apple.com"
    static let sandbox = "https://api.storekit-sandbox.itunes.apple.com"

    /// The bearer token for a request at `now`: valid five minutes (Apple allows at most 60).
    func token(now: WallTime) throws(PaymentsError) -> String {
        let issued = now.nanosecondsSinceEpoch / 1_000_000_000
        let claims: JSONValue = [
            "iss": .string(issuerID), "iat": .int(issued), "exp": .int(issued + 300), "aud": "appstoreconnect-v1", "bid": .string(bundleID),
        ]
        do {
            return try CompactJWS.signES256(header: ["kid": .string(keyID), "typ": "JWT"], claims: claims, key: key)
        } catch {
            throw .providerUnavailable(provider: "appstore", reason: "cannot sign the App Store Server API token (\(error))")
        }
    }

    /// Every signed transaction of the purchase `transactionID` belongs to (its original
    /// transaction: renewals, upgrades, refunds as revocations), oldest first. Nil when Apple
    /// knows no such transaction.
    func history(of transactionID: String, now: @Sendable () -> WallTime) async throws(PaymentsError) -> [String]? {
        var signed: [String] = []
        var revision: String?
        for _ in 0..<maxPages {
            var query = "?sort=ASCENDING"
            if let revision { query += "&revision=" + RevenueCatAPI.pathSegment(revision) }
            guard let page = try await get("/inApps/v2/history/" + RevenueCatAPI.pathSegment(transactionID) + query, now: now) else { return nil }
            guard case .array(let items)? = page["signedTransactions"] else {
                throw .providerUnavailable(provider: "appstore", reason: "the App Store's history has no signedTransactions")
            }
            signed += items.compactMap(\.stringValue)
            guard page["hasMore"] == .bool(true) else { return signed }
            guard let next = page.string("revision"), next != revision else {
                throw .providerUnavailable(provider: "appstore", reason: "the App Store's history says it has more but gives no new revision")
            }
            revision = next
        }
        throw .providerUnavailable(provider: "appstore", reason: "the purchase's history is longer than \(maxPages) pages")
    }

    /// One GET, tried again while Apple fails or throttles; nil for 404 (no such transaction).
    private func get(_ path: String, now: @Sendable () -> WallTime) async throws(PaymentsError) -> JSONValue? {
        guard var request = HTTPRequest(url: baseURL, appending: path) else {
            throw .providerUnavailable(provider: "appstore", reason: "appStoreApiUrl is not an http(s) URL")
        }
        request.method = "GET"
        var asking = self.asking
        asking.caFile = caFile
        let outcome = try await asking.send { () throws(PaymentsError) in
            var signed = request
            signed.headers = [("Authorization", "Bearer " + (try token(now: now()))), ("Accept", "application/json")]
            return signed
        }
        switch outcome {
        case .gaveUp(let reason):
            throw .providerUnavailable(provider: "appstore", reason: "the App Store could not be asked (\(reason))")
        case .answered(let head, let body):
            switch head.status {
            case 200:
                guard let value = try? JSONParser.parse(body, maxDepth: 32), value.objectValue != nil else {
                    throw .providerUnavailable(provider: "appstore", reason: "the App Store's answer is not a JSON object")
                }
                return value
            case 404:
                return nil
            case 401, 403:
                throw .providerUnavailable(
                    provider: "appstore", reason: "the App Store refused the key (HTTP \(head.status)): check appStoreIssuerId, appStoreKeyId and appStorePrivateKeyFile")
            default:
                throw .providerUnavailable(provider: "appstore", reason: "the App Store answered HTTP \(head.status)")
            }
        }
    }
}

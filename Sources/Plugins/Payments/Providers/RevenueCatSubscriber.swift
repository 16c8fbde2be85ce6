// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import HTTP

/// RevenueCat's REST view of one subscriber (`GET /v1/subscribers/{app_user_id}`), the answer
/// "Restore purchases" asks for. It is stored like a webhook event (provider `revenuecat`, id
/// `subscriber:<app user>:<request_date_ms>`, its time RevenueCat's `request_date_ms`) and
/// applied by the same rules: a restore twice in the same millisecond is one event, and a
/// webhook newer than the snapshot still wins.
enum RevenueCatSubscriber {
    /// The snapshot as an event: each entitlement active until its expiry (or for good), or
    /// expired if that is already past at the request time; renewal from the subscription's
    /// `unsubscribe_detected_at`.
    static func decode(_ root: JSONValue) throws(PaymentsError) -> ProviderEvent {
        guard let subscriber = root["subscriber"], subscriber.objectValue != nil else { throw .malformedEvent(reason: "no 'subscriber' object") }
        guard let requested = root.time("request_date_ms", unit: 1_000_000) else { throw .malformedEvent(reason: "no valid 'request_date_ms'") }
        guard let user = root.string("app_user_id") ?? subscriber.string("original_app_user_id"), !user.isEmpty, user.utf8.count <= 200 else {
            throw .malformedEvent(reason: "no 'original_app_user_id'")
        }
        var actions: [ProviderEvent.Action] = []
        for (entitlement, info) in (subscriber["entitlements"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard !entitlement.isEmpty, entitlement.utf8.count <= 200 else { continue }
            let product = info.string("product_identifier")
            let expiry = try time(info, "expires_date")
            let grace = try time(info, "grace_period_expires_date")
            let ends = [expiry, grace].compactMap { $0 }.max()
            if let ends, ends <= requested {
                actions.append(.expire(entitlement: entitlement, product: product))
                continue
            }
            let subscription = product.flatMap { subscriber["subscriptions"]?[$0] }
            let stopped = subscription.map { $0["unsubscribe_detected_at"] != nil && $0["unsubscribe_detected_at"] != .null } ?? true
            actions.append(.activate(entitlement: entitlement, product: product, expiresAt: ends, willRenew: ends != nil && !stopped))
        }
        return ProviderEvent(
            provider: "revenuecat", id: "subscriber:\(user):\(requested / 1_000_000)", type: "SUBSCRIBER", time: requested, subject: .appUser(user),
            actions: actions)
    }

    private static func time(_ info: JSONValue, _ key: String) throws(PaymentsError) -> Int64? {
        guard let value = info[key], value != .null else { return nil }
        guard let text = value.stringValue, let time = RFC3339.parse(text) else { throw .malformedEvent(reason: "'\(key)' is not an RFC 3339 time") }
        return time.nanosecondsSinceEpoch
    }
}

/// RevenueCat's REST API, as far as restoring needs it: the subscriber by app user id, with the
/// secret API key. Fails with `ProviderUnavailable` when RevenueCat cannot be reached or
/// answers with an error (the app says "try again"; nothing was changed).
struct RevenueCatAPI: Sendable {
    var key: String
    /// `https://api.revenuecat.com/v1`; another base for a proxy or a test server.
    var baseURL: String
    var caFile: String?
    var timeout: Duration = .seconds(10)

    /// The subscriber's JSON, with the app user id it was asked for added (`app_user_id`).
    func subscriber(_ appUserID: String) async throws(PaymentsError) -> String {
        guard var request = HTTPRequest(url: baseURL, appending: "/subscribers/" + Self.pathSegment(appUserID)) else {
            throw .providerUnavailable(provider: "revenuecat", reason: "revenuecatApiUrl is not an http(s) URL")
        }
        request.method = "GET"
        request.headers = [("Authorization", "Bearer " + key), ("Accept", "application/json")]
        let head: HTTPHead, body: [UInt8]
        do {
            (head, body) = try await HTTPClient.oneShot(limit: timeout, caFile: caFile, maxResponseBytes: 4 << 20).fetch(request)
        } catch {
            throw .providerUnavailable(provider: "revenuecat", reason: "\(error)")
        }
        guard head.status == 200 else {
            let hint = head.status == 401 || head.status == 403 ? ": check revenuecatApiKey (a secret key, sk_…)" : ""
            throw .providerUnavailable(provider: "revenuecat", reason: "RevenueCat answered HTTP \(head.status)\(hint)")
        }
        guard case .object(var root)? = try? JSONParser.parse(body, maxDepth: 64) else {
            throw .providerUnavailable(provider: "revenuecat", reason: "RevenueCat's answer is not a JSON object")
        }
        root["app_user_id"] = .string(appUserID)
        return String(decoding: JSONWriter.bytes(.object(root)), as: UTF8.self)
    }

    /// `id` percent-encoded for a path segment (RFC 3986 unreserved characters stay).
    static func pathSegment(_ id: String) -> String {
        var out = ""
        for byte in id.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII && (c.isLetter || c.isNumber || "-._~".contains(c)) {
                out.append(c)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

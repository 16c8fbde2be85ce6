// SPDX-License-Identifier: Apache-2.0
import HTTP
/// Cross-origin calls from web apps: only origins on the allow-list (`httpAllowedOrigins`)
/// get the headers that let a browser read a response; everyone else gets none (and a
/// preflight from them is refused).
struct CORSPolicy {
    let allowed: Set<String>
    /// What the routes plugins serve add (`PluginHTTPRoute.crossOrigin`).
    var needs = CrossOriginNeeds()

    /// What every call needs; the plugins' needs are added to these.
    static let base = CrossOriginNeeds(
        methods: ["GET", "POST", "OPTIONS"], requestHeaders: ["Authorization", "Content-Type", "Accept", "Last-Event-ID", "Idempotency-Key", "If-Match"],
        exposedHeaders: ["Retry-After", "WWW-Authenticate", "ETag"])

    func allows(_ origin: String) -> Bool { allowed.contains("*") || allowed.contains(origin) }

    /// Adds the CORS headers for a request from `origin` (its `Origin` header), when allowed.
    func decorate(_ response: inout HTTPResponse, origin: String?) {
        guard let origin, allows(origin) else { return }
        response.headers += [
            ("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
            ("Access-Control-Expose-Headers", Self.base.adding(needs).exposedHeaders.joined(separator: ", ")),
        ]
    }

    func preflight(_ request: HTTPServerRequest) -> HTTPResponse {
        guard let origin = request.headers["origin"], allows(origin) else {
            return HTTPResponse(status: 403, body: ["error": "OriginNotAllowed", "parameters": ["reason": "add the origin to httpAllowedOrigins"]])
        }
        return HTTPResponse(
            status: 204,
            headers: [
                ("Access-Control-Allow-Methods", Self.base.adding(needs).methods.joined(separator: ", ")),
                ("Access-Control-Allow-Headers", Self.base.adding(needs).requestHeaders.joined(separator: ", ")),
                ("Access-Control-Max-Age", "600"),
            ])
    }
}

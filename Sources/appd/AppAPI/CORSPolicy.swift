// SPDX-License-Identifier: Apache-2.0
import HTTP
/// Cross-origin calls from web apps: only origins on the allow-list (`httpAllowedOrigins`)
/// get the headers that let a browser read a response; everyone else gets none (and a
/// preflight from them is refused).
struct CORSPolicy {
    let allowed: Set<String>

    func allows(_ origin: String) -> Bool { allowed.contains("*") || allowed.contains(origin) }

    func decorate(_ response: inout HTTPResponse, for request: HTTPServerRequest) {
        guard let origin = request.headers["origin"], allows(origin) else { return }
        response.headers += [
            ("Access-Control-Allow-Origin", origin), ("Vary", "Origin"), ("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate, ETag"),
        ]
    }

    func preflight(_ request: HTTPServerRequest) -> HTTPResponse {
        guard let origin = request.headers["origin"], allows(origin) else {
            return HTTPResponse(status: 403, body: ["error": "OriginNotAllowed", "parameters": ["reason": "add the origin to httpAllowedOrigins"]])
        }
        return HTTPResponse(
            status: 204,
            headers: [
                ("Access-Control-Allow-Methods", "GET, POST, OPTIONS"), ("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Last-Event-ID, Idempotency-Key, If-Match"),
                ("Access-Control-Max-Age", "600"),
            ])
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Crypto
import HTTP

/// What every console response carries, its cookie, and its plain refusals.
enum ConsoleHeaders {
    /// Scripts, styles and connections from the console itself only; no inline script, no
    /// framing, no plugins, no base tag, forms post to the console only.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    static func decorate(_ response: inout HTTPResponse) {
        response.headers.append(("Content-Security-Policy", contentSecurityPolicy))
        response.headers.append(("X-Frame-Options", "DENY"))
        response.headers.append(("X-Content-Type-Options", "nosniff"))
        // The login link carries its token: never in a Referer.
        response.headers.append(("Referrer-Policy", "no-referrer"))
        if response.header("Cache-Control") == nil { response.headers.append(("Cache-Control", "no-store")) }
    }

    /// `appd_console=…; Path=/console; HttpOnly; SameSite=Strict` (+ `Secure` behind TLS),
    /// living as long as a session may.
    static func sessionCookie(_ value: String, options: ConsoleOptions) -> String {
        let seconds = Int64(options.sessionLifetime.inSeconds)
        return "\(Console.cookieName)=\(value); Path=/console; Max-Age=\(seconds); HttpOnly; SameSite=Strict" + (options.secureCookie ? "; Secure" : "")
    }

    /// Tells the browser to forget the cookie.
    static func clearedCookie(options: ConsoleOptions) -> String {
        "\(Console.cookieName)=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict" + (options.secureCookie ? "; Secure" : "")
    }

    /// The value of cookie `name` in the request's Cookie header.
    static func cookie(_ name: String, in request: HTTPServerRequest) -> String? {
        guard let header = request.headers["cookie"] else { return nil }
        for pair in header.split(separator: ";") {
            let trimmed = pair.drop { $0 == " " }
            guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name else { continue }
            let value = String(trimmed[trimmed.index(after: equals)...])
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// Compares two secrets in constant time.
    static func same(_ a: String, _ b: String) -> Bool {
        Digest.constantTimeEqual(Digest.sha256(Array(a.utf8)), Digest.sha256(Array(b.utf8)))
    }

    static func redirect(to location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)], body: [])
    }

    static func refusal(_ status: Int, _ reason: String) -> HTTPResponse {
        HTTPResponse(status: status, body: ["error": .string(status == 401 ? "NotSignedIn" : status == 403 ? "Forbidden" : "Refused"), "reason": .string(reason)])
    }

    static func methodNotAllowed(_ allow: String) -> HTTPResponse {
        HTTPResponse(status: 405, body: ["error": "MethodNotAllowed", "reason": .string("use \(allow)")], headers: [("Allow", allow)])
    }

    /// The page a browser without a session sees: what to do, and nothing else.
    static func signedOut() -> HTTPResponse {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>appd console: signed out</title></head>
            <body><main><h1>appd console</h1>
            <p id="signed-out">You are not signed in. On the machine appd runs on, run <code>appctl console</code> as an admin and open the link it prints. A link works once.</p>
            </main></body></html>
            """
        return HTTPResponse(status: 401, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(html.utf8))
    }
}

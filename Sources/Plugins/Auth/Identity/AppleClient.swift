// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP

/// Apple's token and revoke endpoints (Sign in with Apple REST API), authenticated with a
/// client secret appd signs itself: an ES256 JWT from the team id, key id and `.p8` key.
struct AppleClient: Sendable {
    /// A form POST: the status and body of the response.
    typealias Post = @Sendable (_ url: String, _ form: [(String, String)]) async throws -> (status: Int, body: [UInt8])

    /// What Apple answered a revocation.
    enum Revocation: Sendable, Equatable {
        case revoked
        /// Apple refused the token for good (already revoked, expired, not Apple's): nothing to retry.
        case refused(String)
        /// Apple could not be reached or failed: retry later.
        case failed(String)
    }

    let settings: AppleServerSettings
    private let key: P256PrivateKey
    private let post: Post

    init(settings: AppleServerSettings, caFile: String?, timeout: Duration, post: Post? = nil) throws(AuthConfigurationError) {
        guard !settings.teamID.isEmpty, !settings.keyID.isEmpty, !settings.clientID.isEmpty else {
            throw AuthConfigurationError("appleTeamId, appleKeyId and an Apple client id are all needed for Apple's token endpoint")
        }
        do {
            key = try P256PrivateKey(pem: settings.privateKeyPEM)
        } catch {
            throw AuthConfigurationError("applePrivateKey: \(error) (it should be the AuthKey_<key id>.p8 file Apple gave)")
        }
        self.settings = settings
        self.post = post ?? Self.https(caFile: caFile, timeout: timeout)
    }

    /// The client secret: `iss` team id, `sub` client id, `aud` Apple, five minutes of life.
    func clientSecret(now: Int64) throws -> String {
        let seconds = now / 1_000_000_000
        let claims: JSONValue = [
            "iss": .string(settings.teamID), "sub": .string(settings.clientID), "aud": "https://appleid.apple.com",
            "iat": .int(seconds), "exp": .int(seconds + 300),
        ]
        return try CompactJWS.signES256(header: ["kid": .string(settings.keyID)], claims: claims, key: key)
    }

    /// Trades an authorization code for Apple's tokens; returns the refresh token after checking
    /// that the ID token Apple returns with it is about `subject`.
    func exchange(code: String, subject: String, now: Int64) async throws -> String {
        let form = [
            ("client_id", settings.clientID), ("client_secret", try clientSecret(now: now)), ("code", code), ("grant_type", "authorization_code"),
        ]
        let (status, body) = try await post(settings.tokenURL, form)
        guard let reply = (try? JSONParser.parse(body, maxDepth: 8))?.objectValue else {
            throw AppleEndpointError("the token endpoint answered \(status) without JSON")
        }
        guard status == 200 else { throw AppleEndpointError("the token endpoint refused the code: \(reply["error"]?.stringValue ?? "status \(status)")") }
        guard let refresh = reply["refresh_token"]?.stringValue, !refresh.isEmpty else { throw AppleEndpointError("no refresh_token in the token response") }
        if let idToken = reply["id_token"]?.stringValue {
            guard let claims = try? CompactJWS(idToken).claims(), claims["sub"]?.stringValue == subject else {
                throw AppleEndpointError("the code belongs to another Apple user than the ID token")
            }
        }
        return refresh
    }

    /// Revokes a refresh token.
    func revoke(refreshToken: String, now: Int64) async -> Revocation {
        do {
            let form = [
                ("client_id", settings.clientID), ("client_secret", try clientSecret(now: now)), ("token", refreshToken),
                ("token_type_hint", "refresh_token"),
            ]
            let (status, body) = try await post(settings.revokeURL, form)
            if status == 200 { return .revoked }
            let error = (try? JSONParser.parse(body, maxDepth: 8))?["error"]?.stringValue
            // invalid_grant / invalid_request: the token is gone or was never good; nothing to retry.
            if status == 400, let error, error == "invalid_grant" || error == "invalid_request" || error == "unsupported_token_type" {
                return .refused(error)
            }
            return .failed("status \(status)\(error.map { ": \($0)" } ?? "")")
        } catch {
            return .failed("\(error)")
        }
    }

    /// The default POST: HTTPS with appd's client, form-encoded.
    static func https(caFile: String?, timeout: Duration) -> Post {
        { url, form in
            guard var request = HTTPRequest(url: url) else { throw AppleEndpointError("not an http(s) URL: \(url)") }
            request.method = "POST"
            request.headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
            request.body = Array(FormEncoding.encode(form).utf8)
            let (head, body) = try await HTTPClient.oneShot(limit: timeout, caFile: caFile).fetch(request)
            return (head.status, body)
        }
    }
}

/// Apple's endpoint failed or answered something unusable.
struct AppleEndpointError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `application/x-www-form-urlencoded` (the WHATWG URL standard's byte set).
enum FormEncoding {
    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                out.append(Character(UnicodeScalar(byte)))
            case UInt8(ascii: " "): out.append("+")
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
            }
        }
        return out
    }
}

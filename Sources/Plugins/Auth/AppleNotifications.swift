// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import HTTP
import Storage

/// `POST /webhooks/apple`: Sign in with Apple's server-to-server notifications. The body is
/// `{"payload": "<JWS>"}` signed with Apple's keys (checked as an ID token's signature is, with
/// Apple's issuer and one of the app's client ids as audience); its `events` claim says what
/// happened. Each notification acts once, however often Apple delivers it. Answers 200 once it
/// is handled (or was before), 400 for a malformed body, 401 for a bad signature or claims, 503
/// when Apple's keys or the database are unavailable (Apple retries).
public struct AppleNotifications: Sendable {
    let service: AuthService
    let maxBodyBytes = 64 * 1024

    public func handle(_ request: HTTPServerRequest, _ body: [UInt8]) async -> HTTPResponse {
        guard request.method == "POST" else {
            return HTTPResponse(status: 405, body: HTTPResponse.errorBody("MethodNotAllowed", reason: "POST the notification"), headers: [("Allow", "POST")])
        }
        guard body.count <= maxBodyBytes else { return HTTPResponse(status: 413, body: HTTPResponse.errorBody("PayloadTooLarge", reason: "over \(maxBodyBytes) bytes")) }
        guard let payload = (try? JSONParser.parse(body, maxDepth: 8))?["payload"]?.stringValue else {
            return HTTPResponse(status: 400, body: HTTPResponse.errorBody("MalformedEvent", reason: "the body is not {\"payload\": \"<JWS>\"}"))
        }
        do {
            let claims = try await service.verifier.verifyAppleNotification(payload, now: service.now)
            guard let eventsText = claims["events"]?.stringValue ?? claims["events"]?.jsonTextIfObject,
                let events = try? JSONParser.parse(Array(eventsText.utf8), maxDepth: 8),
                let type = events["type"]?.stringValue, let subject = events["sub"]?.stringValue, !subject.isEmpty
            else {
                return HTTPResponse(status: 400, body: HTTPResponse.errorBody("MalformedEvent", reason: "the payload has no events with a type and a sub"))
            }
            let time = events["event_time"].map { $0.jsonText } ?? "0"
            let key = "apple:" + (claims["jti"]?.stringValue ?? "\(type):\(subject):\(time)")
            let outcome = try await service.repository.applyAppleNotification(key: key, type: type, subject: subject, now: service.now, causedBy: nil)
            service.audit.notice("Apple notification", metadata: ["type": "\(type)", "outcome": "\(outcome)"])
            return HTTPResponse(status: 200, body: ["type": .string(type), "duplicate": .bool(outcome == .duplicate)])
        } catch let error as AuthError where error.isIdentityProviderUnavailable {
            return HTTPResponse(status: 503, body: HTTPResponse.errorBody("Unavailable", reason: error.description), headers: [("Retry-After", "60")])
        } catch let error as AuthError {
            service.logger.warning("an Apple notification was refused", metadata: ["reason": "\(error)"])
            return HTTPResponse(status: 401, body: HTTPResponse.errorBody(error.wireName, reason: error.description))
        } catch {
            return HTTPResponse(status: 503, body: HTTPResponse.errorBody("Unavailable", reason: "not handled (\(error)); retry"), headers: [("Retry-After", "10")])
        }
    }
}

extension JSONValue {
    /// An object's JSON text (Apple's `events` claim is a JSON string; accept an object too).
    fileprivate var jsonTextIfObject: String? { objectValue == nil ? nil : jsonText }
}

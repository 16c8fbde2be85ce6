// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import HTTP

/// One webhook request, checked: `POST /webhooks/<provider>` with a Content-Length within the
/// limit. A pure function of the bytes (the fuzzers call it); the server answers the
/// `Refusal`'s status when there is one.
public struct WebhookRequest: Sendable, Equatable {
    public var provider: String
    /// Header names lower-cased; a repeated header keeps its last value (Content-Length and
    /// Transfer-Encoding may not repeat).
    public var headers: [String: String]
    public var contentLength: Int
    public var expectsContinue: Bool

    public typealias Refusal = HTTPRefusal

    /// `head` is everything before the blank line that ends the request head.
    public static func parse(head bytes: ArraySlice<UInt8>, maxBodyBytes: Int) -> Result<WebhookRequest, Refusal> {
        HTTPServerRequest.parse(head: bytes, maxBodyBytes: maxBodyBytes).flatMap(route)
    }

    /// The webhook a parsed request delivers, or why it is none.
    public static func route(_ request: HTTPServerRequest) -> Result<WebhookRequest, Refusal> {
        let provider = request.path.hasPrefix("/webhooks/") ? String(request.path.dropFirst("/webhooks/".count)) : ""
        guard !provider.isEmpty, provider.utf8.count <= 32, provider.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            return .failure(Refusal(status: 404, error: "NotFound", reason: "webhooks are accepted at POST /webhooks/<provider>"))
        }
        guard request.method == "POST" else { return .failure(Refusal(status: 405, error: "MethodNotAllowed", reason: "use POST")) }
        return .success(
            WebhookRequest(provider: provider, headers: request.headers.dictionary, contentLength: request.contentLength, expectsContinue: request.expectsContinue))
    }
}

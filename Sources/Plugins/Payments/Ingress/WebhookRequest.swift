import Bus

/// The head of one webhook request, checked: `POST /webhooks/<provider>` with a Content-Length
/// within the limit. A pure function of the bytes (the fuzzers call it); the listener answers
/// the `Refusal`'s status when there is one.
public struct WebhookRequest: Sendable, Equatable {
    public var provider: String
    /// Header names lower-cased; a repeated header keeps its last value (Content-Length and
    /// Transfer-Encoding may not repeat).
    public var headers: [String: String]
    public var contentLength: Int
    public var expectsContinue: Bool

    /// Why a request is refused: the HTTP status and a JSON body.
    public struct Refusal: Error, Equatable {
        public var status: Int
        public var error: String
        public var reason: String
        public var json: JSONValue { ["error": .string(error), "reason": .string(reason)] }
    }

    /// `head` is everything before the blank line that ends the request head.
    public static func parse(head bytes: ArraySlice<UInt8>, maxBodyBytes: Int) -> Result<WebhookRequest, Refusal> {
        func refuse(_ status: Int, _ error: String, _ reason: String) -> Result<WebhookRequest, Refusal> {
            .failure(Refusal(status: status, error: error, reason: reason))
        }
        guard let head = String(validating: bytes, as: UTF8.self) else { return refuse(400, "BadRequest", "the request head is not UTF-8") }
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines.first?.split(separator: " ", omittingEmptySubsequences: false) ?? []
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return refuse(400, "BadRequest", "not an HTTP/1.x request line") }
        var headers: [String: String] = [:]
        var seen: Set<String> = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return refuse(400, "BadRequest", "a header line without a name and ':'") }
            let name = line[..<colon].lowercased()
            guard !name.contains(where: { $0 == " " || $0 == "\t" }) else { return refuse(400, "BadRequest", "a header name with white space") }
            if (name == "content-length" || name == "transfer-encoding") && seen.contains(name) {
                return refuse(400, "BadRequest", "\(name) appears twice")
            }
            seen.insert(name)
            headers[name] = line[line.index(after: colon)...].trimmingWhitespace()
        }
        let path = requestLine[1]
        let provider = path.hasPrefix("/webhooks/") ? String(path.dropFirst("/webhooks/".count)) : ""
        guard !provider.isEmpty, provider.utf8.count <= 32, provider.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            return refuse(404, "NotFound", "webhooks are accepted at POST /webhooks/<provider>")
        }
        guard requestLine[0] == "POST" else { return refuse(405, "MethodNotAllowed", "use POST") }
        guard headers["transfer-encoding"] == nil, let lengthText = headers["content-length"] else {
            return refuse(411, "LengthRequired", "send a Content-Length (chunked bodies are not accepted)")
        }
        guard !lengthText.isEmpty, lengthText.utf8.count <= 12, lengthText.allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(lengthText) else {
            return refuse(400, "BadRequest", "Content-Length is not a number")
        }
        guard length <= maxBodyBytes else { return refuse(413, "PayloadTooLarge", "the body is over \(maxBodyBytes) bytes") }
        return .success(
            WebhookRequest(provider: provider, headers: headers, contentLength: length, expectsContinue: headers["expect"]?.lowercased() == "100-continue"))
    }
}

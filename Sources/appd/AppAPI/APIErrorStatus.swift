// SPDX-License-Identifier: Apache-2.0
import Bus
import HTTP

/// The HTTP answer to an error reply: the status of the category its interface declares
/// (`ErrorCategory.httpStatus`: the client's mistake 4xx, appd's or its database's trouble
/// 5xx), and the error's full name and parameters as the body. No table of error names: an
/// error's category is declared beside it in the IDL, so an external plugin's errors get
/// theirs from the plugin's own IDL.
public enum APIErrorStatus {
    /// The status for `category`; an error whose interface declares no category (an external
    /// plugin's IDL without `category:` lines) is answered 400, as a refused call.
    public static func status(for category: ErrorCategory?) -> Int { category?.httpStatus ?? 400 }

    /// The response for an error reply: `{"error": name, "parameters": {...}}`, with its
    /// category's status (looked up in the interfaces `dispatcher` serves), `Retry-After`
    /// where the error says when to retry, and `WWW-Authenticate` on a 401.
    public static func response(error: String, parameters: JSONValue, in dispatcher: VarlinkDispatcher) -> HTTPResponse {
        response(error: error, parameters: parameters, category: dispatcher.category(ofError: error))
    }

    /// The response for an error whose category the caller knows (one the API raises itself).
    public static func response(error: String, parameters: JSONValue, category: ErrorCategory?) -> HTTPResponse {
        let status = status(for: category)
        var headers: [(name: String, value: String)] = []
        // A conflict that says when to retry (a key whose first call is still running) too.
        if category == .tooManyRequests || category == .unavailable || (category == .conflict && parameters["retryAfterSeconds"] != nil) {
            var seconds: Int64 = 1
            if case .int(let given)? = parameters["retryAfterSeconds"] { seconds = given }
            headers.append(("Retry-After", "\(max(1, seconds))"))
        }
        if category == .unauthenticated { headers.append(("WWW-Authenticate", "Bearer")) }
        return HTTPResponse(status: status, body: ["error": .string(error), "parameters": parameters], headers: headers)
    }

    static func refusal(_ status: Int, _ error: String, _ parameters: JSONValue = [:]) -> HTTPResponse {
        HTTPResponse(status: status, body: ["error": .string(error), "parameters": parameters])
    }
}

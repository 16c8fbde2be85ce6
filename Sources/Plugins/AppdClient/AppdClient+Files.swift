// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Files over HTTP (`io.appd.Files`, docs/files.md): a photo or attachment up, its bytes or a
/// URL an image loader can open without a token back. Listing, describing and deleting are
/// calls like any other (`call(FilesInterface.List())`).
extension AppdClient {
    /// Stores `data` (`POST /files`) and returns the stored file. `contentType` must be what
    /// the bytes are (`image/jpeg`); appd checks it, strips a photo's location and makes
    /// thumbnails. Retried with the same idempotency key (a fresh one when nil) when the
    /// network fails or appd is busy: the file is stored once. Errors: `FilesError`
    /// (`.typeRefused`, `.tooLarge`, `.quotaExceeded`), `AuthError`, `AppdClientError`.
    public func upload(_ data: Data, contentType: String, name: String? = nil, idempotencyKey: String? = nil) async throws -> StoredFile {
        var components = URLComponents(url: baseURL.appendingPathComponent("files"), resolvingAgainstBaseURL: false)
        if let name { components?.queryItems = [URLQueryItem(name: "name", value: name)] }
        guard let url = components?.url else { throw AppdClientError.unexpectedReply("cannot make the upload URL from \(baseURL)") }
        let key = idempotencyKey ?? UUID().uuidString.lowercased()
        let response = try await signedInExchange(repeatable: true) { token in
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.httpBody = data
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return request
        }
        guard response.status == 200 || response.status == 201 else {
            throw WireErrors.error(status: response.status, body: try? JSONParser.parse(response.body))
        }
        struct Uploaded: Decodable { var file: StoredFile }
        return try decode(Uploaded.self, from: response.body).file
    }

    /// File `id`'s bytes, or those of its thumbnail of side `thumbnail` (`StoredFile.thumbnails`).
    public func download(file id: String, thumbnail: Int? = nil) async throws -> Data {
        let url = try fileURL(path: "/files/\(id)", thumbnail: thumbnail)
        let response = try await signedInExchange(repeatable: true) { token in
            var request = URLRequest(url: url)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return request
        }
        guard response.status == 200 else { throw WireErrors.error(status: response.status, body: try? JSONParser.parse(response.body)) }
        return Data(response.body)
    }

    /// A URL that opens file `id` (or its thumbnail) without a token for `seconds` (1–86400):
    /// for `AsyncImage` and other loaders that cannot send a header.
    public func signedURL(forFile id: String, seconds: Int = 300, thumbnail: Int? = nil) async throws -> URL {
        let signed = try await call(FilesInterface.SignURL(id: id, seconds: seconds))
        return try fileURL(path: signed.path, thumbnail: thumbnail)
    }

    /// `path` (which may carry a query) on the server, with `thumbnail=` added when asked; a
    /// `path` that is a whole URL (a `Location` a proxy rewrote) as it is.
    func fileURL(path: String, thumbnail: Int? = nil) throws -> URL {
        if thumbnail == nil, path.hasPrefix("https://") || path.hasPrefix("http://"), let url = URL(string: path) { return url }
        let text = baseURL.absoluteString.trimmingSuffix("/") + path + (thumbnail.map { (path.contains("?") ? "&" : "?") + "thumbnail=\($0)" } ?? "")
        guard let url = URL(string: text) else { throw AppdClientError.unexpectedReply("'\(path)' is not a path on \(baseURL)") }
        return url
    }

    /// One request that carries the session's token: refreshed once on a 401, and, when
    /// `repeatable`, sent again after a network failure or a busy appd as `retry` says.
    func signedInExchange(repeatable: Bool, _ make: @Sendable (String) throws -> URLRequest) async throws -> Response {
        var attempt = 0
        var refreshed = false
        while true {
            try Task.checkCancellation()
            let token = try await sessions.accessToken(refresh)
            let response: Response
            do {
                response = try await exchange(try make(token))
            } catch let error as URLError where error.code != .cancelled {
                guard repeatable, attempt < retry.retries else { throw AppdClientError.transport("\(error.localizedDescription)") }
                attempt += 1
                try await Task.sleep(for: retry.delay(attempt: attempt, retryAfter: nil))
                continue
            }
            if response.status == 401, !refreshed {
                refreshed = true
                _ = try await sessions.refreshed(replacing: token, refresh)
                continue
            }
            let name = (try? JSONParser.parse(response.body))?["error"]?.stringValue
            if repeatable, attempt < retry.retries, RetryPolicy.isRetryable(status: response.status, error: name) {
                attempt += 1
                try await Task.sleep(for: retry.delay(attempt: attempt, retryAfter: response.headers["retry-after"]))
                continue
            }
            return response
        }
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

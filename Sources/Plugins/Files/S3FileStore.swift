// SPDX-License-Identifier: Apache-2.0
import BusCore
import HTTP

/// Where S3-compatible object storage is and how to reach it (`filesS3*` keys).
public struct S3Options: Sendable {
    /// `https://s3.eu-central-1.amazonaws.com`, `http://127.0.0.1:9000`, …
    public var endpoint: String
    public var bucket: String
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    /// `endpoint/bucket/key` (path style, what MinIO, Ceph and most self-hosted servers want)
    /// or `bucket.endpoint/key` (virtual-host style, AWS's default).
    public var pathStyle = true
    /// Put before each file's key (`appd/` gives `appd/files/f_…`).
    public var prefix = ""
    /// Files larger than this go up in parts of this size (S3's multipart upload; at least 5 MiB).
    public var partBytes = 8 << 20
    /// Trusted CA certificates (PEM) for a private endpoint.
    public var caFile: String?

    public init(endpoint: String, bucket: String, region: String, accessKeyID: String, secretAccessKey: String) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }
}

/// Finished files' bytes in an S3-compatible bucket, one object each (`<prefix>files/<id>`),
/// signed with AWS Signature V4; bounded timeouts, three tries for what is safe to repeat.
struct S3FileStore: FileStore {
    let options: S3Options
    let signer: S3Signer
    let client: HTTPClient
    let base: HTTPRequest

    init(_ options: S3Options) throws {
        guard var base = HTTPRequest(url: options.endpoint) else { throw S3Error(status: 0, code: "BadEndpoint", message: "filesS3Endpoint is not an http:// or https:// URL") }
        if !options.pathStyle { base.host = options.bucket + "." + base.host }
        if base.path == "/" { base.path = "" }
        self.options = options
        self.base = base
        self.signer = S3Signer(accessKeyID: options.accessKeyID, secretAccessKey: options.secretAccessKey, region: options.region)
        var client = HTTPClient(timeouts: HTTPTimeouts(), caFile: options.caFile)
        client.maxResponseBytes = 1 << 30
        self.client = client
    }

    func objectPath(_ id: String) -> String {
        base.path + (options.pathStyle ? "/" + options.bucket : "") + "/" + options.prefix + "files/" + id
    }

    func write(_ bytes: [UInt8], id: String) async throws {
        let path = objectPath(id)
        guard bytes.count > options.partBytes else {
            _ = try await send("PUT", path, body: bytes, expect: [200])
            return
        }
        // Multipart: start, send each part (its ETag kept), complete; abort whatever failed.
        let started = try await send("POST", path, query: [("uploads", "")], expect: [200])
        guard let uploadID = Self.element("UploadId", in: started.body) else {
            throw S3Error(status: 200, code: "NoUploadId", message: "CreateMultipartUpload answered no UploadId")
        }
        do {
            var parts: [String] = []
            var start = 0, number = 1
            while start < bytes.count {
                let end = min(start + options.partBytes, bytes.count)
                let answer = try await send("PUT", path, query: [("partNumber", "\(number)"), ("uploadId", uploadID)], body: Array(bytes[start..<end]), expect: [200])
                guard let etag = answer.head.headers["etag"] else { throw S3Error(status: 200, code: "NoETag", message: "UploadPart \(number) answered no ETag") }
                parts.append("<Part><PartNumber>\(number)</PartNumber><ETag>\(etag)</ETag></Part>")
                start = end
                number += 1
            }
            let complete = Array(("<CompleteMultipartUpload>" + parts.joined() + "</CompleteMultipartUpload>").utf8)
            let done = try await send("POST", path, query: [("uploadId", uploadID)], body: complete, expect: [200])
            // S3 may answer 200 with an error in the body when completing.
            if let code = Self.element("Code", in: done.body) { throw S3Error(status: 200, code: code, message: Self.element("Message", in: done.body) ?? "") }
        } catch {
            _ = try? await send("DELETE", path, query: [("uploadId", uploadID)], expect: [204, 200])
            throw error
        }
    }

    func read(id: String) async throws -> [UInt8]? {
        let answer = try await send("GET", objectPath(id), expect: [200, 404])
        return answer.head.status == 404 ? nil : answer.body
    }

    func remove(_ ids: [String]) async throws {
        for id in ids { _ = try await send("DELETE", objectPath(id), expect: [204, 200, 404]) }
    }

    /// One signed request, tried up to three times when the connection fails or the server
    /// answers 5xx (every request here is safe to repeat: a PUT of the same bytes, a GET).
    private func send(
        _ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8] = [], expect: Set<Int>
    ) async throws -> (head: HTTPHead, body: [UInt8]) {
        var last: any Error = S3Error(status: 0, code: "Unreachable", message: "no attempt was made")
        for attempt in 0..<3 {
            if attempt > 0 { try await Task.sleep(for: .milliseconds(200 << attempt)) }
            var request = base
            request.method = method
            let queryText = query.map { $0.1.isEmpty ? S3Signer.encode($0.0, slash: true) : "\(S3Signer.encode($0.0, slash: true))=\(S3Signer.encode($0.1, slash: true))" }
                .joined(separator: "&")
            request.path = S3Signer.encode(path, slash: false) + (queryText.isEmpty ? "" : "?" + queryText)
            request.body = body
            let host = base.port == (base.tls ? 443 : 80) ? base.host : "\(base.host):\(base.port)"
            request.headers = signer.sign(method: method, path: path, query: query, headers: [("host", host)], payload: body, at: .now())
            do {
                let answer = try await client.fetch(request)
                if expect.contains(answer.head.status) { return answer }
                let error = S3Error(
                    status: answer.head.status, code: Self.element("Code", in: answer.body) ?? "HTTP\(answer.head.status)",
                    message: Self.element("Message", in: answer.body) ?? "")
                guard answer.head.status >= 500 else { throw error }
                last = error
            } catch let error as S3Error {
                throw error
            } catch {
                last = error
            }
        }
        throw last
    }

    /// The text of the first `<name>` element of an S3 XML answer.
    static func element(_ name: String, in body: [UInt8]) -> String? {
        guard let open = body.firstRange(of: Array("<\(name)>".utf8)) else { return nil }
        let rest = body[open.upperBound...]
        guard let close = rest.firstRange(of: Array("</\(name)>".utf8)) else { return nil }
        return String(decoding: body[open.upperBound..<close.lowerBound], as: UTF8.self)
    }
}

/// The object store refused a request or could not be reached; says which and why.
struct S3Error: Error, CustomStringConvertible {
    let status: Int
    let code: String
    let message: String
    var description: String { "the object store answered \(status) \(code)\(message.isEmpty ? "" : ": " + message)" }
}

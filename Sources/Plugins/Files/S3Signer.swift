// SPDX-License-Identifier: Apache-2.0
import BusCore
import Crypto

/// AWS Signature Version 4 for S3 requests (the `Authorization` header form): the canonical
/// request of the method, path, query, the signed headers and the payload's SHA-256; the
/// string to sign over its hash and the scope; the key derived from the secret per day,
/// region and service.
struct S3Signer: Sendable {
    let accessKeyID: String
    let secretAccessKey: String
    let region: String
    var service = "s3"

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256` and
    /// `Authorization`. `headers` are the others to sign (`host` among them), names lower-case.
    func sign(
        method: String, path: String, query: [(String, String)], headers: [(String, String)], payload: [UInt8], at time: WallTime
    ) -> [(String, String)] {
        let stamp = Self.timestamp(time)
        let day = String(stamp.prefix(8))
        let payloadHash = Digest.hex(Digest.sha256(payload))
        var signed = headers.map { ($0.0.lowercased(), $0.1.trimmingWhitespace()) }
        signed += [("x-amz-content-sha256", payloadHash), ("x-amz-date", stamp)]
        signed.sort { $0.0 < $1.0 }
        let signedNames = signed.map(\.0).joined(separator: ";")
        let encoded: [(String, String)] = query.map { pair in (Self.encode(pair.0, slash: true), Self.encode(pair.1, slash: true)) }
        let sorted = encoded.sorted { a, b in a.0 == b.0 ? a.1 < b.1 : a.0 < b.0 }
        let canonicalQuery = sorted.map { pair in pair.0 + "=" + pair.1 }.joined(separator: "&")
        let canonical = [
            method, Self.encode(path, slash: false), canonicalQuery, signed.map { "\($0.0):\($0.1)\n" }.joined(), signedNames, payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let toSign = "AWS4-HMAC-SHA256\n\(stamp)\n\(scope)\n\(Digest.hex(Digest.sha256(Array(canonical.utf8))))"
        var key = Digest.hmacSHA256(key: Array("AWS4\(secretAccessKey)".utf8), data: Array(day.utf8))
        for part in [region, service, "aws4_request"] { key = Digest.hmacSHA256(key: key, data: Array(part.utf8)) }
        let signature = Digest.hex(Digest.hmacSHA256(key: key, data: Array(toSign.utf8)))
        return [
            ("x-amz-date", stamp), ("x-amz-content-sha256", payloadHash),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(scope), SignedHeaders=\(signedNames), Signature=\(signature)"),
        ]
    }

    /// RFC 3986 percent-encoding of everything but unreserved characters (and `/` in a path);
    /// also what RFC 8187's `filename*` takes.
    static func encode(_ text: String, slash: Bool) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || [0x2D, 0x2E, 0x5F, 0x7E].contains(byte)
            if unreserved || (byte == 0x2F && !slash) {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// `20130524T000000Z`.
    static func timestamp(_ time: WallTime) -> String {
        let text = time.rfc3339  // 2013-05-24T00:00:00.000Z
        let digits = text.prefix(19).filter { $0 != "-" && $0 != ":" }
        return String(digits) + "Z"
    }
}

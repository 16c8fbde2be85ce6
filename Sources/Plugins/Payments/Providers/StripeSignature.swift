// SPDX-License-Identifier: Apache-2.0
import Contracts
import Crypto

/// Stripe's `Stripe-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…][,v0=…]`.
/// The signature is HMAC-SHA256 over `"{t}.{raw body}"` with the endpoint's signing secret.
/// Any `v1` may match any configured secret (Stripe sends one per secret while a secret
/// rotates); other schemes are ignored, as Stripe's own libraries do.
public struct StripeSignature: Sendable, Equatable {
    public var timestamp: Int64
    public var signatures: [[UInt8]]

    /// Old deliveries are refused after this many seconds (Stripe's libraries use 300).
    public static let tolerance: Int64 = 300
    /// Clocks drift: a timestamp this many seconds ahead is still accepted.
    public static let futureTolerance: Int64 = 30
    /// A header longer than this is refused unparsed.
    static let maxHeaderBytes = 4096

    /// Parses the header; nil reasons say what is wrong.
    public static func parse(_ header: String) throws(PaymentsError) -> StripeSignature {
        guard header.utf8.count <= maxHeaderBytes else { throw .invalidSignature(reason: "the Stripe-Signature header is too long") }
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for item in header.split(separator: ",") {
            let trimmed = item.trimmingWhitespace()
            guard let eq = trimmed.firstIndex(of: "=") else { continue }
            let key = trimmed[..<eq]
            let value = trimmed[trimmed.index(after: eq)...]
            switch key {
            case "t":
                guard timestamp == nil, let t = Int64(value), t > 0 else { throw .invalidSignature(reason: "the timestamp t= is not a number of seconds") }
                timestamp = t
            case "v1":
                guard let bytes = hexBytes(value), bytes.count == 32 else { continue }
                signatures.append(bytes)
            default:
                continue
            }
        }
        guard let timestamp else { throw .invalidSignature(reason: "no timestamp t= in the Stripe-Signature header") }
        guard !signatures.isEmpty else { throw .invalidSignature(reason: "no v1 signature in the Stripe-Signature header") }
        return StripeSignature(timestamp: timestamp, signatures: signatures)
    }

    /// Checks `body` against the header with any of `secrets` at `now` (Unix seconds).
    public static func verify(header: String?, body: [UInt8], secrets: [String], now: Int64) throws(PaymentsError) {
        guard let header else { throw .invalidSignature(reason: "no Stripe-Signature header") }
        let parsed = try parse(header)
        guard now - parsed.timestamp <= tolerance else { throw .invalidSignature(reason: "the timestamp is more than \(tolerance) s old (a replay?)") }
        guard parsed.timestamp - now <= futureTolerance else { throw .invalidSignature(reason: "the timestamp is in the future") }
        let signed = Array("\(parsed.timestamp).".utf8) + body
        var matched = false
        for secret in secrets {
            let expected = Digest.hmacSHA256(key: Array(secret.utf8), data: signed)
            // Compare against every candidate without stopping early.
            for candidate in parsed.signatures where Digest.constantTimeEqual(expected, candidate) { matched = true }
        }
        guard matched else { throw .invalidSignature(reason: "no v1 signature matches the endpoint secret") }
    }

    /// The header Stripe would send for `body` at `timestamp` (tests and `appctl` samples).
    public static func sign(body: [UInt8], secret: String, timestamp: Int64) -> String {
        let mac = Digest.hmacSHA256(key: Array(secret.utf8), data: Array("\(timestamp).".utf8) + body)
        return "t=\(timestamp),v1=" + mac.map { hexDigits[Int($0 >> 4)] + hexDigits[Int($0 & 15)] }.joined()
    }

    private static let hexDigits = "0123456789abcdef".map(String.init)

    static func hexBytes(_ text: Substring) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}

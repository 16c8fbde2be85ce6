// SPDX-License-Identifier: Apache-2.0
import AppctlKit
import Bus
import HTTP
import Chat
import Crypto
import Payments

/// Chat's HTTP response decoder, reached through its public probe.
typealias HTTPResponseProbe = HTTP.HTTPResponseFuzzing

/// The fuzz targets: each takes arbitrary bytes and must never crash, hang or grow without
/// bound — only return or throw the parser's typed error.
public enum FuzzTargets {
    /// A P-256 key made at start: the fuzzer cannot sign with it.
    static let jwsKeys: JSONWebKeySet = {
        guard let key = try? P256PrivateKey.generate() else { preconditionFailure("cannot generate a P-256 key") }
        let (x, y) = key.publicPoint
        let jwk: [String: JSONValue] = ["kty": "EC", "crv": "P-256", "kid": "k1", "x": .string(Base64.encode(x, urlSafe: true)), "y": .string(Base64.encode(y, urlSafe: true))]
        guard let parsed = try? JSONWebKey(jwk) else { preconditionFailure("cannot build the fuzz key") }
        return JSONWebKeySet(keys: [parsed])
    }()

    public static let names = ["varlink", "idl", "json", "appctl", "sse", "stripe-signature", "phc", "webhook", "rfc3339", "http-request", "http-response", "jws"]

    /// An interface with every kind of field, to validate calls against.
    static let interface: VarlinkInterface? = try? VarlinkInterface(
        parsing: """
            interface io.appd.Fuzz

            type Item (
              id: string,
              tags: []string,
              extra: ?object,
              kind: (a, b, c)
            )

            method Add(title: string, notes: ?string, due: ?int, ratio: ?float, done: ?bool, item: ?Item, items: ?[]Item, map: ?[string]int) -> (id: string)
            method List(filter: ?(all, open, done), cursor: ?string, limit: ?int) -> (items: []Item)
            method Empty() -> ()

            error NotFound ()

            """)

    public static func run(_ target: String, _ bytes: [UInt8]) {
        switch target {
        case "varlink": varlink(bytes)
        case "idl": _ = try? VarlinkInterface(parsing: String(decoding: bytes, as: UTF8.self))
        case "json":
            if let value = try? JSONParser.parse(bytes) {
                // What parses must write back and parse to the same value.
                let again = try? JSONParser.parse(JSONWriter.bytes(value))
                precondition(again == value, "JSON round trip changed the value")
            }
        case "appctl": appctl(bytes)
        case "sse": sse(bytes)
        case "stripe-signature":
            let text = String(decoding: bytes, as: UTF8.self)
            _ = try? StripeSignature.parse(text)
            _ = try? StripeSignature.verify(header: text, body: bytes, secrets: ["whsec_fuzz"], now: 1_700_000_000)
        case "phc":
            if let hash = PasswordHash(phc: String(decoding: bytes, as: UTF8.self)) {
                precondition(PasswordHash(phc: hash.phc) == hash, "PHC round trip changed the hash")
            }
        case "webhook":
            guard let first = bytes.first else { return }
            _ = try? WebhookDecoding.decode(provider: first % 2 == 0 ? "stripe" : "revenuecat", body: Array(bytes.dropFirst()))
        case "rfc3339":
            if let time = RFC3339.parse(String(decoding: bytes, as: UTF8.self)), time.nanosecondsSinceEpoch >= 0 {
                // What parses must print and parse back to the same instant (to the millisecond).
                let again = RFC3339.parse(time.rfc3339)?.nanosecondsSinceEpoch
                precondition(again == time.nanosecondsSinceEpoch / 1_000_000 * 1_000_000, "RFC 3339 round trip changed the time")
            }
        case "http-request":
            // The HTTP server's request head (hostile clients), as the API and the webhooks route it.
            if case .success(let request) = HTTPServerRequest.parse(head: bytes[...], maxBodyBytes: 65536) {
                precondition(request.target.hasPrefix(request.path), "the path is not the target's start")
                precondition(request.contentLength <= 65536, "a body over the limit was accepted")
                _ = WebhookRequest.route(request)
            }
        case "http-response":
            // An LLM endpoint's response (a hostile or broken upstream), split where the first byte says.
            var decoder = HTTPResponseProbe()
            let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
            decoder.feed(Array(bytes[..<cut]))
            decoder.feed(Array(bytes[cut...]))
        case "jws":
            // An ID token or a provider's key set from a hostile source: the compact JWS parser
            // (strict base64url, header, claims), the JWK set parser, and verification with a
            // fixed key set (nothing forged may verify: the set's key is never the fuzzer's).
            let text = String(decoding: bytes, as: UTF8.self)
            if let jws = try? CompactJWS(text) {
                precondition(!jws.signature.isEmpty, "a token without a signature was accepted")
                _ = try? jws.claims()
                precondition((try? jwsKeys.verify(jws)) == nil, "a fuzzed token verified")
            }
            if let set = try? JSONWebKeySet(parsing: bytes) { precondition(set.keys.count <= JSONWebKeySet.maxKeys) }
            if let decoded = Base64.decodeURLStrict(text) {
                precondition(Base64.encode(decoded, urlSafe: true) == text, "strict base64url is not canonical")
            }
        default:
            preconditionFailure("unknown fuzz target \(target); one of \(names.joined(separator: ", "))")
        }
    }

    /// Framing with a small limit, then each frame as a call, validated against the interface.
    static func varlink(_ bytes: [UInt8]) {
        var reader = VarlinkFrameReader(maxBytes: 4096)
        // Feed in two pieces, split where the first byte says, as reads would.
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        reader.append(Array(bytes[..<cut]))
        var frames: [ArraySlice<UInt8>] = []
        while let frame = try? reader.nextFrame() { frames.append(frame) }
        reader.compact()
        reader.append(Array(bytes[cut...]))
        while let frame = try? reader.nextFrame() { frames.append(frame) }
        for frame in frames {
            guard let call = try? VarlinkCall(frame: frame) else { continue }
            let name = call.method.split(separator: ".").last.map(String.init) ?? ""
            if let interface, let method = interface.method(name) {
                try? interface.validateInput(of: method, call.parameters, qualifiedName: call.method)
            }
        }
    }

    /// NUL-separated words as an appctl command line against the fuzz interface.
    static func appctl(_ bytes: [UInt8]) {
        guard let interface else { return }
        let words = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        _ = try? AppctlFuzzing.parse(Array(words.prefix(64)), against: interface)
    }

    /// The same events whatever the split.
    static func sse(_ bytes: [UInt8]) {
        var whole = SSEParser(maxLineBytes: 1024)
        let all = (try? whole.feed(bytes)).map { $0 + whole.finish() }
        guard let all else { return }
        var split = SSEParser(maxLineBytes: 1024)
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        let parts = (try? split.feed(bytes[..<cut])).flatMap { first in (try? split.feed(bytes[cut...])).map { first + $0 } }
        guard let parts else { return }
        precondition(parts + split.finish() == all, "SSE events depend on where the bytes were split")
    }
}

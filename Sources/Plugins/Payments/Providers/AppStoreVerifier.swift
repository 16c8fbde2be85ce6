// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto

/// Verifies what the App Store signs — StoreKit 2 transactions and renewal infos, App Store
/// Server Notifications v2 — as Apple's App Store Server Library does, offline: a compact JWS
/// whose header's `x5c` holds the signing certificate and its intermediate; the chain must
/// lead to a root the operator installed (Apple Root CA - G3; appd ships none), valid when the
/// payload was signed, with Apple's markers on the leaf and the intermediate; the signature is
/// ES256 by the leaf's key, and nothing else is accepted (`alg` must be ES256).
struct AppStoreVerifier: Sendable {
    let roots: [X509Certificate]
    let bundleID: String
    /// `Production`, `Sandbox` (or both while an app is in review: its reviewers buy in Sandbox).
    let environments: Set<String>

    /// Apple's marker on the certificate that signs App Store payloads.
    static let leafOID = "1.2.840.113635.100.6.11.1"
    /// Apple's marker on the Worldwide Developer Relations intermediate.
    static let intermediateOID = "1.2.840.113635.100.6.2.1"
    /// A notification nests a transaction and a renewal info, each with its own chain.
    static let maxBytes = 64 * 1024
    /// A payload signed further in the future than this is refused (clock skew allowance).
    static let skew: Int64 = 300 * 1_000_000_000

    /// The payload's claims once the JWS verifies; `InvalidSignature` with the reason otherwise.
    func verify(_ text: String, now: WallTime) throws(PaymentsError) -> JSONValue {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(text, maxBytes: Self.maxBytes)
        } catch {
            throw .invalidSignature(reason: "not an App Store signed payload (\(error))")
        }
        guard jws.algorithm == "ES256" else { throw .invalidSignature(reason: "the algorithm is \(jws.algorithm), not ES256") }
        guard case .array(let chain)? = jws.header["x5c"], chain.count >= 2, chain.count <= 4 else {
            throw .invalidSignature(reason: "the header has no x5c certificate chain")
        }
        var certificates: [X509Certificate] = []
        for entry in chain.prefix(2) {
            // RFC 7515 §4.1.6: standard base64 (not base64url) DER.
            guard let text = entry.stringValue, let der = Base64.decode(text) else { throw .invalidSignature(reason: "an x5c entry is not base64 DER") }
            do {
                certificates.append(try X509Certificate(der: der))
            } catch {
                throw .invalidSignature(reason: "an x5c entry is not a certificate (\(error))")
            }
        }
        let (leaf, intermediate) = (certificates[0], certificates[1])
        guard let claims = try? JSONParser.parse(jws.payload, maxDepth: 16), claims.objectValue != nil else {
            throw .invalidSignature(reason: "the payload is not a JSON object")
        }
        // The chain is checked as of the signing (Apple's library does so offline): a payload
        // signed while its certificates were valid stays verifiable, one signed outside not.
        let signed = claims.time("signedDate", unit: 1_000_000) ?? now.nanosecondsSinceEpoch
        guard signed <= now.nanosecondsSinceEpoch + Self.skew else { throw .invalidSignature(reason: "signedDate is in the future") }
        do {
            try leaf.verifyChain(intermediates: [intermediate], roots: roots, at: WallTime(nanosecondsSinceEpoch: signed))
        } catch {
            throw .invalidSignature(reason: "\(error)")
        }
        guard leaf.hasExtension(Self.leafOID) else { throw .invalidSignature(reason: "the signing certificate is not Apple's App Store certificate (no \(Self.leafOID))") }
        guard intermediate.hasExtension(Self.intermediateOID) else {
            throw .invalidSignature(reason: "the intermediate certificate is not Apple's (no \(Self.intermediateOID))")
        }
        let key: P256PublicKey
        do {
            key = try leaf.p256PublicKey()
        } catch {
            throw .invalidSignature(reason: "\(error)")
        }
        guard key.verify(signature: jws.signature, message: jws.signingInput) else { throw .invalidSignature(reason: "the ES256 signature does not verify") }
        return claims
    }

    /// A payload's `bundleId` and `environment` must be this app's.
    func checkApp(_ object: JSONValue, what: String) throws(PaymentsError) {
        guard object.string("bundleId") == bundleID else {
            throw .invalidSignature(reason: "the \(what) is for bundle '\(object.string("bundleId") ?? "")', not \(bundleID)")
        }
        guard let environment = object.string("environment"), environments.contains(environment) else {
            throw .invalidSignature(
                reason: "the \(what) is from the \(object.string("environment") ?? "unnamed") environment; accepted: \(environments.sorted().joined(separator: ", "))")
        }
    }

    /// A verified StoreKit 2 transaction for this app.
    func transaction(_ text: String, now: WallTime) throws(PaymentsError) -> AppStoreTransaction {
        let claims = try verify(text, now: now)
        try checkApp(claims, what: "transaction")
        return try AppStoreTransaction(claims)
    }
}

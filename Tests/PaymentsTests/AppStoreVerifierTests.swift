// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import Testing
import TestSupport
@testable import Payments

/// What the App Store signs, verified offline with throwaway chains shaped like Apple's (real
/// X.509 and ES256): the good chain passes; every hostile one fails with its reason.
@Suite(.cleansUp) struct AppStoreVerifierTests {
    let now = WallTime(nanosecondsSinceEpoch: 1_800_000_000_000_000_000)
    var nowMillis: Int64 { now.nanosecondsSinceEpoch / 1_000_000 }

    func verifier(environments: Set<String> = ["Production"]) throws -> AppStoreVerifier {
        AppStoreVerifier(roots: try X509Certificate.load(file: try AppStorePayloads.rootFile()), bundleID: AppStorePayloads.bundle, environments: environments)
    }

    func purchase(signed: Int64? = nil, bundle: String = AppStorePayloads.bundle, environment: String = "Production") -> JSONValue {
        AppStorePayloads.transaction(
            id: "2000000001", original: "2000000001", purchasedMillis: nowMillis - 1000, expiresMillis: nowMillis + 30 * 86_400_000,
            signedMillis: signed ?? nowMillis, token: "6F1B1D2C-7A8E-4B8B-9C3D-0E1F2A3B4C5D", bundle: bundle, environment: environment)
    }

    func refusal(_ text: String, verifier: AppStoreVerifier? = nil) throws -> String? {
        do {
            _ = try (verifier ?? self.verifier()).transaction(text, now: now)
            return nil
        } catch let error as PaymentsError {
            guard case .invalidSignature(let reason) = error else { return "not InvalidSignature: \(error)" }
            return reason
        }
    }

    @Test func aTransactionSignedByTheAppStoreChainVerifies() throws {
        let transaction = try verifier().transaction(try AppStoreChains.good.sign(purchase()), now: now)
        #expect(transaction.transactionID == "2000000001" && transaction.productID == "pro_monthly")
        #expect(transaction.appAccountToken == "6f1b1d2c-7a8e-4b8b-9c3d-0e1f2a3b4c5d", "the token in canonical (lower-case) form")
        #expect(transaction.expiresDate == (nowMillis + 30 * 86_400_000) * 1_000_000)
    }

    @Test func hostileChainsAreRefusedWithTheirReason() throws {
        let cases: [(Chain, String)] = [
            (AppStoreChains.otherRoot, "certificate chain does not verify"),
            (AppStoreChains.leafWithoutOID, "1.2.840.113635.100.6.11.1"),
            (AppStoreChains.expiredIntermediate, "expired"),
            (AppStoreChains.intermediateWithoutOID, "1.2.840.113635.100.6.2.1"),
        ]
        for (chain, expected) in cases {
            let reason = try refusal(try chain.sign(purchase()))
            #expect(reason?.contains(expected) == true, "\(expected): \(reason ?? "accepted")")
        }
    }

    @Test func algorithmAndHeaderTricksAreRefused() throws {
        let good = try AppStoreChains.good.sign(purchase())
        let parts = good.split(separator: ".").map(String.init)
        func withHeader(_ header: [String: JSONValue]) -> String {
            Base64.encode(Array(JSONValue.object(header).jsonText.utf8), urlSafe: true) + "." + parts[1] + "." + parts[2]
        }
        for alg in ["none", "HS256", "ES384", "RS256"] {
            #expect(try refusal(withHeader(["alg": .string(alg), "x5c": AppStoreChains.good.x5c])) != nil, "alg \(alg)")
        }
        #expect(try refusal(withHeader(["alg": "ES256"]))?.contains("x5c") == true, "no chain")
        #expect(try refusal(withHeader(["alg": "ES256", "x5c": ["not base64 !"]])) != nil, "a chain of garbage")
        #expect(try refusal(withHeader(["alg": "ES256", "x5c": [.string(Base64.encode([1, 2, 3])), .string(Base64.encode([4, 5]))]])) != nil)
        // The good chain in the header, the signature by another key.
        let forged = try Chain(
            leaf: AppStoreChains.good.leaf, intermediate: AppStoreChains.good.intermediate, root: AppStoreChains.good.root,
            key: AppStoreChains.otherRoot.key
        ).sign(purchase())
        #expect(try refusal(forged)?.contains("signature") == true)
        // One byte of the payload changed.
        var payload = Base64.decodeURLStrict(parts[1]) ?? []
        payload[payload.count / 2] ^= 0x01
        #expect(try refusal(parts[0] + "." + Base64.encode(payload, urlSafe: true) + "." + parts[2]) != nil)
        #expect(try refusal("a.b") != nil && refusal("") != nil)
    }

    @Test func anotherAppOrEnvironmentIsRefused() throws {
        let otherBundle = try AppStoreChains.good.sign(purchase(bundle: "com.attacker.app"))
        #expect(try refusal(otherBundle)?.contains("com.attacker.app") == true)
        let sandbox = try AppStoreChains.good.sign(purchase(environment: "Sandbox"))
        #expect(try refusal(sandbox)?.contains("Sandbox") == true)
        #expect(try refusal(sandbox, verifier: verifier(environments: ["Production", "Sandbox"])) == nil, "accepted where the operator allows Sandbox")
    }

    @Test func aPayloadSignedInTheFutureIsRefused() throws {
        let future = try AppStoreChains.good.sign(purchase(signed: nowMillis + 3_600_000))
        #expect(try refusal(future)?.contains("future") == true)
    }

    @Test func rootsLoadFromDERAndPEMAndAMissingFileSaysSo() throws {
        let pem = try X509Certificate.load(file: try AppStorePayloads.rootFile())
        #expect(pem.count == 1)
        #expect(pem[0].der == Chain.der(AppStoreChains.trustedRoot))
        #expect(throws: CryptoError.self) { try X509Certificate.load(file: "/nonexistent/AppleRootCA-G3.cer") }
        #expect(throws: CryptoError.self) { try X509Certificate(der: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: pem[0].der + [0]) }
    }

    @Test func tokensAreUUIDsInOneForm() throws {
        #expect(AppStoreAccountTokens.canonical("6F1B1D2C-7A8E-4B8B-9C3D-0E1F2A3B4C5D") == "6f1b1d2c-7a8e-4b8b-9c3d-0e1f2a3b4c5d")
        for bad in ["", "6F1B1D2C7A8E4B8B9C3D0E1F2A3B4C5D", "6F1B1D2C-7A8E-4B8B-9C3D-0E1F2A3B4C5G", "u_123"] {
            #expect(AppStoreAccountTokens.canonical(bad) == nil, "\(bad)")
        }
        let made = try AppStoreAccountTokens.random()
        #expect(AppStoreAccountTokens.canonical(made) == made)
        #expect(Array(made.utf8)[14] == UInt8(ascii: "4"), "version 4")
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Testing
@testable import Crypto

/// Known answers made by an independent implementation (Python's `cryptography`): an RSA-2048
/// key and an RS256 token it signed, a P-256 key and an ES256 token it signed.
enum JOSEVectors {
    static let rsaN =
        "v0omWGJTgXPWh-eldsFv670-hSg93dPOXNFtBO1MdpyNWiIEgD48PMBKQ2YWGnyy0TCRq2dUuE2nSVF3B9bmbBB8JZDPg-1a_Cnl-AkNFr1EC52zCTF8X1RwltB6f7aAliJRB5h0xjApU5XFpETLanFQXgxafgMh"
        + "R8z_-554ljpvOFc2E3yuNU0o4XqAP64y7DlQHo62lWBr1fL8GcwgvVoEhBvpCkDjdhdp1ck84x9DIM5jgrUkImYmrCzw-h6oR5AtD2sXQZ7klizRAl6-tD0YvxcakgxZFEUX6pqHsn4xheiXQ6JOMpCmPdsd8SyZ"
        + "owlX9qHWZ6VmqpVOy3LdCw"
    static let rsaE = "AQAB"
    static let rs256 =
        "eyJhbGciOiJSUzI1NiIsImtpZCI6InIxIn0.eyJpc3MiOiJqb2UiLCJzdWIiOiJzIn0.F_e1Cb3F-Ih7THBZyCEs0RSVSweJBl5GbBr5xMKsi4znjq6BuJ9FuzNZEXYfbhzBscSKEwDl8GyzGMK8fnmYZWskVbFs"
        + "TdWL4V31Mvr1aeqlaPisiR822qkeAtoANbHyk-cvODtyW8d3Nn7qO5h8WTPD2TQEU9QamlgZZEElivgFLrNbYcTRZ1kf48tAsRcCbCbYh8ep5HHlwnt4I8Y9I4df1PN5ICFKmUCRPyiq2kfADG2Lr7MnJdldRLAN"
        + "gsevgiHXzM_2Bbkwus7D-1Lo2TsGoJwXK5Mhk1CaPZwOrG9MHdWyRJOlVTAVKEVCP-Jh0ouZd56Hu_ao4ZsFUQKUVg"
    static let ecX = "pvjQMs5N23D1Wr97WAS6AzjMGY0pDkjx35sTuP_StHM"
    static let ecY = "BwAQ3ioh-nZPIqW3NIrJH6WhLH6I7UV1lv56UWoQy-A"
    static let es256 =
        "eyJhbGciOiJFUzI1NiIsImtpZCI6ImUxIn0.eyJpc3MiOiJqb2UiLCJzdWIiOiJzIn0.3IiGtodEoRs_9k0ZkYyLMXXCJfm48S2HbkcXZ6vgDbO4ysuW5U_OmWZuCZ0c6z9haDC3uC2O_hHA79q9T6kpeg"

    static var keySet: JSONWebKeySet {
        get throws {
            try JSONWebKeySet(
                parsing: Array(
                    """
                    {"keys": [
                      {"kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256", "n": "\(rsaN)", "e": "\(rsaE)"},
                      {"kty": "EC", "kid": "e1", "crv": "P-256", "x": "\(ecX)", "y": "\(ecY)"},
                      {"kty": "RSA", "kid": "enc", "use": "enc", "n": "\(rsaN)", "e": "\(rsaE)"},
                      {"kty": "oct", "kid": "h1", "k": "c2VjcmV0"}
                    ]}
                    """.utf8))
        }
    }
}

@Suite struct JOSETests {
    @Test func strictBase64URLRefusesPaddingOtherAlphabetsAndNonCanonicalEndings() {
        #expect(Base64.decodeURLStrict("AQAB") == [1, 0, 1])
        #expect(Base64.decodeURLStrict("-_8") == [0xFB, 0xFF])
        #expect(Base64.decodeURLStrict("AQ==") == nil)
        #expect(Base64.decodeURLStrict("+/8") == nil)
        #expect(Base64.decodeURLStrict("AQ A") == nil)
        #expect(Base64.decodeURLStrict("A") == nil)
        // "AR" decodes to the same byte as "AQ" with a stray low bit: one encoding per value.
        #expect(Base64.decodeURLStrict("AQ") == [1])
        #expect(Base64.decodeURLStrict("AR") == nil)
    }

    @Test func tokensSignedByAnotherImplementationVerify() throws {
        let keys = try JOSEVectors.keySet
        #expect(keys.keys.count == 2, "the enc and oct keys are skipped")
        try keys.verify(CompactJWS(JOSEVectors.rs256))
        try keys.verify(CompactJWS(JOSEVectors.es256))
        #expect(try CompactJWS(JOSEVectors.rs256).claims()["iss"] == "joe")
    }

    @Test func aChangedPayloadOrSignatureDoesNotVerify() throws {
        let keys = try JOSEVectors.keySet
        var parts = JOSEVectors.rs256.split(separator: ".").map(String.init)
        parts[1] = Base64.encode(Array(#"{"iss":"eve","sub":"s"}"#.utf8), urlSafe: true)
        #expect(throws: JOSEError.signature) { try keys.verify(CompactJWS(parts.joined(separator: "."))) }
        var es = JOSEVectors.es256.split(separator: ".").map(String.init)
        var signature = Base64.decodeURLStrict(es[2])!
        signature[10] ^= 1
        es[2] = Base64.encode(signature, urlSafe: true)
        #expect(throws: JOSEError.signature) { try keys.verify(CompactJWS(es.joined(separator: "."))) }
    }

    @Test func aKeyVerifiesOnlyTheAlgorithmItNames() throws {
        let keys = try JOSEVectors.keySet
        let payload = JOSEVectors.rs256.split(separator: ".")[1]
        func token(_ header: String, signature: [UInt8]) -> String {
            Base64.encode(Array(header.utf8), urlSafe: true) + "." + payload + "." + Base64.encode(signature, urlSafe: true)
        }
        // alg none: no signature at all, or one added to get past an emptiness check.
        #expect(throws: JOSEError.algorithm("none")) { try keys.verify(CompactJWS(token(#"{"alg":"none","kid":"r1"}"#, signature: []))) }
        #expect(throws: JOSEError.algorithm("none")) { try keys.verify(CompactJWS(token(#"{"alg":"none","kid":"r1"}"#, signature: [1]))) }
        // HS256 with the RSA public key's bytes as the HMAC secret (the classic key confusion).
        let header = #"{"alg":"HS256","kid":"r1"}"#
        let input = Array((Base64.encode(Array(header.utf8), urlSafe: true) + "." + payload).utf8)
        let forged = Digest.hmacSHA256(key: Array(JOSEVectors.rsaN.utf8), data: input)
        #expect(throws: JOSEError.algorithm("HS256")) { try keys.verify(CompactJWS(token(header, signature: forged))) }
        // The EC token's signature presented as RS256 under the EC key's id.
        let es = JOSEVectors.es256.split(separator: ".")
        let swapped = token(#"{"alg":"RS256","kid":"e1"}"#, signature: Base64.decodeURLStrict(es[2])!)
        #expect(throws: JOSEError.algorithm("RS256")) { try keys.verify(CompactJWS(swapped)) }
        #expect(throws: JOSEError.unknownKey("nope")) { try keys.verify(CompactJWS(token(#"{"alg":"RS256","kid":"nope"}"#, signature: [1]))) }
        #expect(throws: JOSEError.unknownKey("enc")) { try keys.verify(CompactJWS(token(#"{"alg":"RS256","kid":"enc"}"#, signature: [1]))) }
    }

    @Test(arguments: [
        "a.b", "a.b.c.d", "", "..", "e30.e30.", "!.e30.AA", "eyJhbGciOiJSUzI1NiJ9.e30.AA=",
        // A header that is not an object, one without alg, one with crit, a non-string kid.
        "W10.e30.AA", "e30.e30.AA", "eyJhbGciOiJSUzI1NiIsImNyaXQiOlsiYiJdfQ.e30.AA", "eyJhbGciOiJSUzI1NiIsImtpZCI6MX0.e30.AA",
    ])
    func malformedTokensAreRefusedBeforeAnyKeyIsTried(_ text: String) {
        #expect(throws: JOSEError.self) { try CompactJWS(text) }
    }

    @Test func oversizedTokensAreRefused() {
        let big = String(repeating: "A", count: CompactJWS.maxBytes) + ".e30.AA"
        #expect(throws: JOSEError.malformed("longer than \(CompactJWS.maxBytes) bytes")) { try CompactJWS(big) }
    }

    @Test func weakOrBrokenKeysAreRefused() throws {
        // A 1024-bit modulus, an even exponent, a point off the curve.
        let short = Base64.encode([0x80] + [UInt8](repeating: 1, count: 127), urlSafe: true)
        #expect(throws: JOSEError.self) { try JSONWebKeySet(parsing: Array(#"{"keys":[{"kty":"RSA","n":"\#(short)","e":"AQAB"}]}"#.utf8)) }
        #expect(throws: JOSEError.self) { try JSONWebKeySet(parsing: Array(#"{"keys":[{"kty":"RSA","n":"\#(JOSEVectors.rsaN)","e":"AQAC"}]}"#.utf8)) }
        let offCurve = Base64.encode([UInt8](repeating: 7, count: 32), urlSafe: true)
        #expect(throws: JOSEError.self) {
            try JSONWebKeySet(parsing: Array(#"{"keys":[{"kty":"EC","crv":"P-256","x":"\#(JOSEVectors.ecX)","y":"\#(offCurve)"}]}"#.utf8))
        }
        #expect(throws: JOSEError.self) { try JSONWebKeySet(parsing: Array(#"{"nokeys":[]}"#.utf8)) }
    }

    @Test func es256SignaturesMadeHereVerifyHereAndAreFixedSize() throws {
        let key = try P256PrivateKey.generate()
        let (x, y) = key.publicPoint
        #expect(x.count == 32 && y.count == 32)
        let token = try CompactJWS.signES256(header: ["kid": "k"], claims: ["sub": "s"], key: key)
        let jws = try CompactJWS(token)
        #expect(jws.signature.count == 64)
        let set = JSONWebKeySet(keys: [
            try #require(
                try JSONWebKey([
                    "kty": "EC", "crv": "P-256", "kid": "k",
                    "x": .string(Base64.encode(x, urlSafe: true)), "y": .string(Base64.encode(y, urlSafe: true)),
                ]))
        ])
        try set.verify(jws)
        let other = try P256PrivateKey.generate()
        #expect(!other.publicKey.verify(signature: jws.signature, message: jws.signingInput))
    }

    @Test func aPKCS8PEMKeyIsReadAndAnRSAKeyIsNot() throws {
        // A P-256 key in PKCS#8, as Apple's .p8 files hold it (made with `openssl genpkey`).
        let pem = """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg+NC9BpDDvH1juZx5
            0Ovgbfz8EzCRVquGfgCz7s8DeqmhRANCAATN9vCnjX8a40oq1MpScADV3/zNX+F0
            CrcAVkcpo7eUEZMTuAiczmlhwJ3VgEpM+MopC+CkSDVNbP+yBzJXGxsM
            -----END PRIVATE KEY-----
            """
        let key = try P256PrivateKey(pem: pem)
        let signature = try key.sign(Array("hello".utf8))
        #expect(key.publicKey.verify(signature: signature, message: Array("hello".utf8)))
        #expect(throws: CryptoError.self) { try P256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        let rsa = """
            -----BEGIN PRIVATE KEY-----
            MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBALIUbfiiWqezfaAD
            8QIdW8Bejuxs69psgMgpRAF7/76cKzluWugs0VE6I9SxUiT+X80iicqSErlo+GU6
            fF8o6sVzUVIlaelzIiFvPJiQNFBThAfJ5bn+gS/VaGSlDTBIpZyLdg2l42fq2MEE
            5egJ3ijyqc7oZdjbVUUgL68u5QYfAgMBAAECgYEAqGHI2iApuAhv8K3JZUZ9Sxgd
            7E/Rc2bFHn5mX0DwQTtJY7SFIKPACB4BY0uHcJNV4pGV2ITmT4qB1LXIg/IciaEX
            IVnIQSZcYFwFj2Jennjv8ufru8qfS1icQp7dHsMDxurYug7id57ZVtZ/0slBZFWl
            hCVSyAgR0a9RHxLNfoECQQDrhLirk/ilLYIx2doMjUqTiP4TqM5BGuRdVE4H5O4e
            y15sljA0G4tK7UC+4hmEa7RoU8EKx0KeFEW/VaFTWcr1AkEAwZD37VYgd6QWDOk1
            MdSghY5SpvmND3LDRfG8m5JsM5/nEwtWcIoIYGUqR6PLC/DHmOc7fr1Efx0Q0tw9
            9hBIQwJAJq2+UldTz3TA3AUGHWea5s3pxDrF3MVY2cb9pahAPwhxMm4b7oLThnOe
            XXrua+PwVe3jVyzQUPvNVJXwj6rAfQJAPEjlHnLTe8+L2ouLOLDLKa1QypYwO553
            eMI4Bo/MyStE8WZ3jmc/Ap6fU16M73QXBeUGX4uc2KX5xmI3nfomNwJBANdFyFVS
            ttiEQ7q4Z2i6OzX/OBUUgRT+NuwFKkSpoufJmOLnwledC5P8OijgEOeKsHUdrz0J
            r+xvT8Lsp2FOlno=
            -----END PRIVATE KEY-----
            """
        #expect(throws: CryptoError("the key is not an EC key on P-256")) { try P256PrivateKey(pem: rsa) }
    }
}

@Suite struct AESGCMTests {
    @Test func sealedSecretsOpenOnlyUnchangedWithTheSameKeyAndAssociatedData() throws {
        let key = try AESGCM(key: try Digest.randomBytes(32))
        let secret = Array("r.apple-refresh-token".utf8)
        let sealed = try key.seal(secret, associatedData: Array("apple".utf8))
        #expect(sealed.count == 12 + secret.count + 16)
        #expect(key.open(sealed, associatedData: Array("apple".utf8)) == secret)
        #expect(key.open(sealed, associatedData: Array("google".utf8)) == nil)
        var changed = sealed
        changed[14] ^= 1
        #expect(key.open(changed, associatedData: Array("apple".utf8)) == nil)
        #expect(try AESGCM(key: try Digest.randomBytes(32)).open(sealed, associatedData: Array("apple".utf8)) == nil)
        #expect(try key.seal(secret) != key.seal(secret), "a fresh nonce each time")
        #expect(throws: CryptoError.self) { try AESGCM(key: [1, 2, 3]) }
    }

    /// Sealed by Python's `cryptography` (AESGCM, key 32×0x07, nonce 0…11, associated data "aad").
    @Test func opensWhatAnotherImplementationSealed() throws {
        let key = try AESGCM(key: [UInt8](repeating: 7, count: 32))
        let sealed = Base64.decode("AAECAwQFBgcICQoLcOSFHHLW7iQKqH3+sNGyAFtW75c7")!
        #expect(key.open(sealed, associatedData: Array("aad".utf8)).map { String(decoding: $0, as: UTF8.self) } == "hello")
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import Crypto
import Testing

/// RS256 signing with a service account's RSA key (Google Play's token requests).
@Suite struct RSAPrivateKeyTests {
    /// Made with Python's cryptography (2048 bits, PKCS#8, as a service account's JSON key holds it).
    static let pkcs8 = """
        -----BEGIN PRIVATE KEY-----
        MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC/O5GNa11lL2CY
        rllpAjj+PAY1lhxemMzMacpww8tOJDPpu8arD2mJowC24rfRThvD0h5Xt4/pM5GL
        mO8IzQke8RNKhpcK7dQtp9ceZ32a3hXDq95cVfT4BPC/L+JBxd4UHLhsQF6s69Xr
        FGFVBxuxqfpJff6VacBVkU62FLr54qLe0EuOXc2e9ibPMjQ863djccJFytTq81Js
        BapgkzCiWR+ag5AvFCjKKYeUCSF5dP/8dBHqj1AQOGwgl0MXoyxSPGWECa8L9Ft6
        R96Df0qbPxd0kpbRIO47xcgfZ7vs5wCtHoe1ccAZ0lGwzPLD5ErTfulzHh6WxrAj
        yM+wSo+3AgMBAAECggEAEWNSNcCoalXne5qGyLSKCBvfGKpAhB1yqbeIz74N01oZ
        WkxXoSAyoXAv1XFB84cdoS2O0rz/Gd41grLyMSOri6Ox9FnOjBDZ9RjIx5vzYMyG
        wBb1jgHG13JjjY7GDOL38W43GqizsxdyiQB+ZSPTUdE5z8rkBiPqeB1RQd8arTPV
        Cx2TmZBmgvCwKIanq7XkaWgzxsvlv+7qZI0LIKYkH8C+fyzLG4e2PLdA6SCsWBWs
        o4N63Nenapg/hjeiNaXZr3KVgoLr11uQFmGp6/9oDiyJbalvGi0MPB2vw1CLjEIu
        mVUiKgoJ60yqR/51LseErNXO54GmQm1+gMX4WT3CIQKBgQDhMCLSZA+vVCabkCuu
        UG50Pky9oigydH7A70z+FprwmewlFs98kwq5LP+6KgLGXKS+IiJUVE8JwlFuLB95
        x3N/41ys1Bjncg18DrDQCeAkMjUIdsEWm4LV/io/L+A/uhh2iLa/i51LKHz7Dja+
        BvhJsMRqQsOISPuL9Agv+N2E0QKBgQDZZgxXengLVQbUWvUopDR9e6PfLY03ir84
        HCDHifgLikHV9XMbzQ/u1/9qrNiKQBVDZCxvV63E5bz4x5xTww8uav70kdmQ5pyI
        TKBdqlMQsMHnB6mD1blQVvUcuALqcV5VaGxFeJE50J2SlErNn4zI+LFQhUMvES/t
        1JIMvZCOBwKBgQCon7YDm8APB1Gdvbin4DzFuP0YJ3w4Q/nCma8quVyufGRTZaBb
        ZXRrM6IPEnRfe3I1mjPgt/0zjpoRiOLM+yinBGcaV/yKG2KzmgCW2D5KfHov61Ut
        i6fOfHPAOyaOMdktsbQ+/Nn9NMVZ7cvaQjfcXozGEVaAED6lD0iuO4oNcQKBgBaf
        jAE+eWeUfZVzsbd8/wlf6Hm9H8j741JPewnIzctFo/xEAqqN+G5+g9HyEsawTIYq
        0oTztt2amsO44gfFcLr/33BMDTwLA5cbgkS9CM/f1Q3ZukZB43r80Z0feQ40pgB1
        UW8ZUOOXVg5+6Bnl1JzFZI5gj9FCFJ7HVDuHLpfZAoGBANSyxerdS/SOIzolSzbg
        GiCHDFOg32xE0RI+swcBUn986TR+tWsMQRRYbw833QCwKG6yxNISTra98CRf6I2M
        7GPUuOdnSIlPANXP3yB8l59E0U001tlMy7D49nonAPX7GeH2V6fXi+BpAQcM0QkA
        S/QiQFuCJiHnmObLM4Rn4zRa
        -----END PRIVATE KEY-----
        """
    /// 1024 bits, PKCS#1: too small.
    static let small = """
        -----BEGIN RSA PRIVATE KEY-----
        MIICWwIBAAKBgQCqgTJGkKolbvlzN6GadAcLDgL+Zf/sEdZh1PN+725oNItN8aoV
        sjQYxRzE5VEnfYsY1iD9QAkDZiUgS7ABvaHmCELat4elp5g3IReQ9t3h2HlpGZak
        13ao1tmE5aLNmmOVAdw3gogMFciYDzS1oYyTvfVzjXT3bLHoQ63oOxsunwIDAQAB
        AoGAGQ0kcuO8bAWTFw+cadIUWtZzMCeSY3/3bKZaJFNPeHYH5arVH5zwNJd5c6Bx
        vQigEEUd0be/20T9vXIBaTAQgjtcmk4jKXgDGqZvFlxRcgoN3WVdRbYeLmLpkIHA
        L0iJfIQ2mFpjbUVq+kTAOlBNlDRL7lQoN5bAADMWZ97s75ECQQDTmBZNnVkWvn1+
        nrFhLKJTpOLgG8DZRNhanzN3DW7BJb6JbZGxf8ExktcZF1nNUkyCb2whWqEeKPQY
        Jxx8ZwGXAkEAzkmTjg9skje+U323scXRA0A2stsGW9WnFnuuy3wBl1BCvPE5jq2/
        nBMX7rywYtb2+LwrNIXb7kAHXO86akVMOQJASe3PjRq2791ql3z22M7xgGwR4N+R
        h9goB7GsF6KX2eBILFgeGXhbleiKQvgHpldk6AXqL9Usig8hCfdQWp7azQJAFjAR
        v+Dm059NSFuoS2W0gn4ApCIsv+nuC9wHw/k1jpniY8IqZ69GgboIA/SloCvw6nYK
        y55uNmUKpbNRfCax+QJATWT6aLXeN7L2C/F1/j4fOl/oNMWpTEH1oleo/JSIkxe2
        JoUjnqvhpf+InZcKfM6P7eCM7BG0dxaZE5WUKJNQRQ==
        -----END RSA PRIVATE KEY-----
        """

    @Test func aSignatureVerifiesWithThePublicHalfAndNotAfterAChange() throws {
        let key = try RSAPrivateKey(pem: Self.pkcs8)
        let message = Array("header.payload".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 256)
        #expect(key.publicKey.verify(signature: signature, message: message))
        #expect(!key.publicKey.verify(signature: signature, message: Array("header.payloaD".utf8)))
    }

    @Test func rs256TokensCarryTheirHeaderAndVerify() throws {
        let key = try RSAPrivateKey(pem: Self.pkcs8)
        let token = try CompactJWS.signRS256(header: ["kid": "k1", "typ": "JWT"], claims: ["iss": "a@example.com"], key: key)
        let jws = try CompactJWS(token)
        #expect(jws.algorithm == "RS256" && jws.keyID == "k1")
        #expect(key.publicKey.verify(signature: jws.signature, message: jws.signingInput))
    }

    @Test func otherKeysAreRefused() {
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: Self.small) }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: "not a key") }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Contracts

/// The providers an app signs in with through `SignInWithIdToken`.
public enum SignInProvider: String, Sendable, Hashable, CaseIterable {
    case apple
    case google
}

/// The nonce of one Sign in with Apple (or Google) request: the app gives `hashed` to the
/// provider (`ASAuthorizationAppleIDRequest.nonce`), which puts it in the ID token, and `raw` to
/// appd, which checks that the token carries its SHA-256 — so a token taken from another
/// sign-in cannot be replayed here. Make a new one for every request.
public struct SignInNonce: Sendable, Hashable {
    /// What appd gets (`SignInWithIdToken.nonce`).
    public let raw: String

    public init(raw: String) { self.raw = raw }

    /// A random nonce of `length` characters from a 64-letter alphabet (6 bits each: 32
    /// characters are 192 bits), from the system's secure generator.
    public static func random(length: Int = 32) -> SignInNonce {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_")
        var generator = SystemRandomNumberGenerator()
        return SignInNonce(raw: String((0..<max(16, length)).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] }))
    }

    /// What the provider gets: the raw nonce's SHA-256, in lowercase hex.
    public var hashed: String { SHA256.hex(raw) }
}

extension AuthInterface.SignInWithIdToken {
    /// A sign-in with `provider`'s ID token and the nonce the request was made with.
    public init(provider: SignInProvider, idToken: String, nonce: SignInNonce?, fullName: String? = nil, authorizationCode: String? = nil) {
        self.init(provider: provider.rawValue, idToken: idToken, nonce: nonce?.raw, fullName: fullName, authorizationCode: authorizationCode)
    }
}

extension AuthInterface.LinkIdentity {
    /// Links `provider`'s identity to the signed-in account, with the nonce its request was made with.
    public init(provider: SignInProvider, idToken: String, nonce: SignInNonce?, authorizationCode: String? = nil) {
        self.init(provider: provider.rawValue, idToken: idToken, nonce: nonce?.raw, authorizationCode: authorizationCode)
    }
}

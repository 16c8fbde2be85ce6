// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import AppdClient
import Contracts

/// The parts of the client an app's sign-in depends on, on Linux as on iOS: the nonce's SHA-256
/// (NIST's examples), the nonce itself, and the file token store.
@Suite struct ClientSecurityPartsTests {
    @Test func sha256MatchesNISTsExamples() {
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex(String(repeating: "a", count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // A message whose padding needs a second block (56 bytes) and one of exactly 64.
        #expect(SHA256.hex(String(repeating: "a", count: 56)) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        #expect(SHA256.hex(String(repeating: "a", count: 64)) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
    }

    @Test func aNonceIsRandomAndItsHashIsWhatTheProviderGets() {
        let first = SignInNonce.random(), second = SignInNonce.random()
        #expect(first.raw.count == 32 && first != second)
        #expect(first.raw.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) })
        #expect(SignInNonce(raw: "abc").hashed == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let call = AuthInterface.SignInWithIdToken(provider: .apple, idToken: "t", nonce: first)
        #expect(call.provider == "apple" && call.nonce == first.raw)
    }

    static func session(_ email: String) -> Session {
        Session(
            accessToken: "a-" + email, refreshToken: "r-" + email, expiresAt: "2030-01-01T00:00:00Z",
            user: User(id: "u_1", email: email, displayName: nil, onboarded: true, emailVerified: true, guest: false, createdAt: "2026-01-01T00:00:00Z"))
    }

    /// The file store keeps the session 0600 (written to a new file, renamed into place) and
    /// reads back what it saved; a corrupt file is no session, never a crash.
    @Test func theFileStoreIsPrivateAndACorruptFileIsNoSession() async throws {
        let folder = NSTemporaryDirectory() + "appd-client-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = FileTokenStore(path: folder + "/session.json")
        #expect(await store.load() == nil)
        await store.save(Self.session("ada@example.com"))
        let mode = try FileManager.default.attributesOfItem(atPath: folder + "/session.json")[.posixPermissions] as? Int
        #expect(mode == 0o600, "mode \(String(mode ?? 0, radix: 8))")
        #expect(await store.load()?.user.email == "ada@example.com")
        try Data("{\"accessToken\": tru".utf8).write(to: URL(fileURLWithPath: folder + "/session.json"))
        #expect(await store.load() == nil)
        #expect(!FileManager.default.fileExists(atPath: folder + "/session.json"), "the corrupt file is removed")
        // A client over a corrupt store starts signed out.
        try Data("not json".utf8).write(to: URL(fileURLWithPath: folder + "/session.json"))
        let client = AppdClient(baseURL: URL(string: "http://127.0.0.1:9")!, tokenStore: FileTokenStore(path: folder + "/session.json"))
        #expect(await client.sessions.currentState == .signedOut)
        await store.clear()
        #expect(await store.load() == nil)
    }
}

// SPDX-License-Identifier: Apache-2.0
import TestSupport
import Synchronization
import Testing
@testable import Crypto
import BusCore

func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16) ?? 0 }
}

@Suite struct ScryptTests {
    /// RFC 7914 §12 test vectors (the fourth, N=2^20, needs 1 GiB and is left out).
    @Test(arguments: [
        (
            "", "", 4, 1, 1,
            "77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97 f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42 fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17 e8 d3 e0 fb "
                + "2e 0d 36 28 cf 35 e2 0c 38 d1 89 06"
        ),
        (
            "password", "NaCl", 10, 8, 16,
            "fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62 2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 "
                + "4a 83 ee 6d 83 60 cb df a2 cc 06 40"
        ),
        (
            "pleaseletmein", "SodiumChloride", 14, 8, 1,
            "70 23 bd cb 3a fd 73 48 46 1c 06 cd 81 fd 38 eb fd a8 fb ba 90 4f 8e 3e a9 b5 43 f6 54 5d a1 f2 d5 43 29 55 61 3f 0f cf 62 d4 97 05 24 2a 9a f9 e6 1e 85 dc "
                + "0d 65 1e 40 df cf 01 7b 45 57 58 87"
        ),
    ])
    func rfc7914Vectors(password: String, salt: String, logN: Int, r: Int, p: Int, expected: String) throws {
        let derived = try Scrypt.derive(
            password: Array(password.utf8), salt: Array(salt.utf8), parameters: .init(logN: logN, r: r, p: p), length: 64)
        #expect(derived == hex(expected))
    }

    @Test func theInteractiveParametersWorkDespiteOpenSSLsDefaultMemoryCap() throws {
        // N=2^17, r=8 needs 128 MiB: more than OpenSSL's 32 MB default maxmem.
        let derived = try Scrypt.derive(password: Array("pw".utf8), salt: Array("saltsalt".utf8), parameters: .interactive, length: 32)
        #expect(derived.count == 32)
    }
}

@Suite struct PasswordHasherTests {
    let fast = Scrypt.Parameters(logN: 10, r: 8, p: 1)

    @Test func hashesToPHCStringsThatVerify() async throws {
        let hasher = try PasswordHasher(parameters: fast)
        let phc = try await hasher.hash("correct horse battery staple")
        #expect(phc.hasPrefix("$scrypt$ln=10,r=8,p=1$"))
        #expect(!phc.contains("correct horse"))
        #expect(try await hasher.verify("correct horse battery staple", against: phc) == (true, false))
        #expect(try await hasher.verify("wrong", against: phc).matches == false)
        #expect(try await hasher.hash("same") != (try await hasher.hash("same")))  // salted
    }

    @Test func weakerStoredParametersAskForARehash() async throws {
        let old = try PasswordHasher(parameters: Scrypt.Parameters(logN: 8, r: 8, p: 1))
        let current = try PasswordHasher(parameters: fast)
        let phc = try await old.hash("pw-123456")
        #expect(try await current.verify("pw-123456", against: phc) == (true, true))
    }

    @Test func malformedHashesAndHugePasswordsFailWithoutShortcuts() async throws {
        let hasher = try PasswordHasher(parameters: fast)
        #expect(try await hasher.verify("x", against: "$scrypt$ln=99,r=8,p=1$AAAA$AAAA").matches == false)
        #expect(try await hasher.verify("x", against: "not a hash").matches == false)
        await #expect(throws: CryptoError.self) { try await hasher.hash(String(repeating: "x", count: 1025)) }
        let phc = try await hasher.hash(String(repeating: "y", count: 1024))
        #expect(try await hasher.verify(String(repeating: "y", count: 1024), against: phc).matches)
    }

    @Test func theDummyPathRunsARealDerivation() async throws {
        let hasher = try PasswordHasher(parameters: fast)
        try await hasher.verifyDummy("anything")
        #expect(hasher.dummyVerifications == 1)
    }

    @Test func workBeyondTheQueueIsRefusedAtOnce() async throws {
        let hasher = try PasswordHasher(parameters: Scrypt.Parameters(logN: 14, r: 8, p: 1), maxConcurrent: 1, maxWaiting: 1)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do {
                        _ = try await hasher.hash("pw")
                        return true
                    } catch {
                        return false
                    }
                }
            }
            var results: [Bool] = []
            for await outcome in group { results.append(outcome) }
            return results
        }
        #expect(outcomes.contains(false))
        #expect(outcomes.filter { $0 }.count >= 2)
    }
}

/// Security review finding 4: password work one account can ask for again and again cannot
/// take the threads sign-in needs.
@Suite struct HashingLaneTests {
    @Test func aFloodOfAccountWorkLeavesSignInItsThreads() async throws {
        let hasher = try PasswordHasher(parameters: Scrypt.Parameters(logN: 14, r: 8, p: 1), maxConcurrent: 4, maxWaiting: 8)
        final class Flags: Sendable {
            let refused = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
        }
        let flags = Flags()
        let flood = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        while !flags.stop.load(ordering: .relaxed) {
                            do { _ = try await hasher.hash("pw", lane: .account) } catch {
                                flags.refused.add(1, ordering: .relaxed)
                                try? await Task.sleep(for: .milliseconds(2))
                            }
                        }
                    }
                }
            }
        }
        // The account lane is full (it refuses work) ...
        #expect(await eventually { flags.refused.load(ordering: .relaxed) > 10 })
        // ... and sign-ins still get through, one after another.
        for _ in 0..<5 {
            let phc = try await hasher.hash("correct horse", lane: .signIn)
            #expect(try await hasher.verify("correct horse", against: phc, lane: .signIn).matches)
        }
        flags.stop.store(true, ordering: .relaxed)
        await flood.value
    }
}

@Suite struct PHCAndTokenTests {
    @Test func phcRoundTripsAndRejectsForeignStrings() {
        let hash = PasswordHash(parameters: .interactive, salt: Array(0..<16), hash: Array(0..<32))
        #expect(PasswordHash(phc: hash.phc) == hash)
        for bad in [
            "", "$scrypt$", "$argon2id$v=19$m=1,t=1,p=1$AAAA$AAAA", "$scrypt$ln=17,r=8$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAA",
            "$scrypt$ln=17,r=8,p=1,r=8$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAA", "$scrypt$ln=17,r=8,p=1$!!$AAAA",
        ] {
            #expect(PasswordHash(phc: bad) == nil, "\(bad)")
        }
    }

    @Test func base64MatchesRFC4648() {
        let cases: [(String, String)] = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in cases {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64.encode([0xFB, 0xFF], urlSafe: true) == "-_8")
        #expect(Base64.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64.decode("a") == nil)
        #expect(Base64.decode("ab$c") == nil)
    }

    @Test func tokensAreRandomAndOnlyTheirDigestIsKept() throws {
        let a = try SecretToken.generate(), b = try SecretToken.generate()
        #expect(a.count == 43 && a != b)
        #expect(SecretToken.digest(a) == SecretToken.digest(a))
        #expect(SecretToken.digest(a) != a)
        #expect(Digest.sha256(Array("abc".utf8)) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func hmacAndConstantTimeComparison() {
        // RFC 4231 test case 2.
        #expect(
            Digest.hmacSHA256(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
                == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        #expect(Digest.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Digest.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Digest.constantTimeEqual([1, 2], [1, 2, 3]))
    }
}

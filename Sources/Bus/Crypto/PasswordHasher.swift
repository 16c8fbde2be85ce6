// SPDX-License-Identifier: Apache-2.0
import BusCore
import Runtime
import Synchronization

/// Hashes and verifies passwords with scrypt, off the cooperative pool, with bounded work.
///
/// At most `maxConcurrent` derivations run at once (each takes ~128 MiB and ~0.5 s); up to
/// `maxWaiting` more wait their turn; past that `PasswordHasherBusy` is thrown at once.
///
/// The threads are split in two lanes, so that work a signed-in account can ask for over and
/// over (changing its password, deleting itself, a reset) can never take the threads sign-in
/// and sign-up need (security review finding 4): `.account` gets a quarter of the threads
/// (at least one) and a short queue, `.signIn` the rest.
public final class PasswordHasher: Sendable {
    /// Which share of the hashing threads a derivation runs on.
    public enum Lane: Sendable {
        /// Sign-in and sign-up: what lets people in.
        case signIn
        /// Password changes, account deletion, resets.
        case account
    }

    /// Passwords longer than this are refused before any work (1024 bytes).
    public static let maxPasswordBytes = 1024

    public let parameters: Scrypt.Parameters
    /// At most `maxConcurrent` threads derive at once; at most `maxWaiting` derivations wait.
    private let signInPool: BlockingPool
    private let accountPool: BlockingPool
    private let dummy: PasswordHash
    private let dummyRuns = Atomic<Int>(0)

    public init(parameters: Scrypt.Parameters = .interactive, maxConcurrent: Int = 4, maxWaiting: Int = 64) throws(CryptoError) {
        self.parameters = parameters
        let threads = max(2, maxConcurrent)
        let accountThreads = max(1, threads / 4)
        self.signInPool = BlockingPool(name: "appd-scrypt", threads: threads - accountThreads, queueLimit: max(0, maxWaiting))
        self.accountPool = BlockingPool(name: "appd-scrypt-account", threads: accountThreads, queueLimit: max(0, maxWaiting / 8))
        // A hash of a random password: verifying against it costs what a real check costs.
        let salt = try Digest.randomBytes(16)
        self.dummy = PasswordHash(parameters: parameters, salt: salt, hash: try Digest.randomBytes(32))
    }

    /// A new PHC string for `password`.
    public func hash(_ password: String, lane: Lane = .signIn) async throws -> String {
        let bytes = Array(password.utf8)
        guard bytes.count <= Self.maxPasswordBytes else { throw CryptoError("password longer than \(Self.maxPasswordBytes) bytes") }
        let salt = try Digest.randomBytes(16)
        let parameters = self.parameters
        let derived = try await limited(lane) { () throws(CryptoError) -> [UInt8] in
            try Scrypt.derive(password: bytes, salt: salt, parameters: parameters, length: 32)
        }
        return PasswordHash(parameters: parameters, salt: salt, hash: derived).phc
    }

    /// Whether `password` matches `phc`, and whether the stored hash uses weaker parameters
    /// than today's (rehash it on this successful sign-in).
    public func verify(_ password: String, against phc: String, lane: Lane = .signIn) async throws -> (matches: Bool, needsRehash: Bool) {
        let bytes = Array(password.utf8)
        guard bytes.count <= Self.maxPasswordBytes, let stored = PasswordHash(phc: phc) else {
            // Same cost as a real check, so malformed input reveals nothing by timing.
            _ = try await verify(bytes, against: dummy, lane: lane)
            return (false, false)
        }
        let matches = try await verify(bytes, against: stored, lane: lane)
        return (matches, matches && stored.parameters != parameters)
    }

    /// Runs a full verification against a dummy hash: what an unknown account costs, so it
    /// cannot be told from a wrong password.
    public func verifyDummy(_ password: String) async throws {
        dummyRuns.add(1, ordering: .relaxed)
        _ = try await verify(Array(password.utf8.prefix(Self.maxPasswordBytes)), against: dummy, lane: .signIn)
    }

    /// How many dummy verifications ran (tests assert the unknown-user path takes it).
    public var dummyVerifications: Int { dummyRuns.load(ordering: .relaxed) }

    private func verify(_ password: [UInt8], against stored: PasswordHash, lane: Lane) async throws -> Bool {
        let derived = try await limited(lane) { () throws(CryptoError) -> [UInt8] in
            try Scrypt.derive(password: password, salt: stored.salt, parameters: stored.parameters, length: stored.hash.count)
        }
        return Digest.constantTimeEqual(derived, stored.hash)
    }

    /// Runs a derivation on its lane's pool; a full queue is `PasswordHasherBusy`.
    private func limited(_ lane: Lane, _ work: @escaping @Sendable () throws(CryptoError) -> [UInt8]) async throws -> [UInt8] {
        do {
            return try await (lane == .signIn ? signInPool : accountPool).run { () throws -> [UInt8] in try work() }
        } catch PoolRefusal.busy {
            throw PasswordHasherBusy()
        }
    }
}

/// Too many password checks are queued; the caller should retry shortly.
public struct PasswordHasherBusy: Error, Equatable, CustomStringConvertible {
    public var description: String { "too many password checks in progress; retry in a moment" }
}

/// Random tokens as base64url text, and the SHA-256 digests that are all the database keeps.
public enum SecretToken {
    /// 32 random bytes, base64url without padding (43 characters).
    public static func generate() throws(CryptoError) -> String {
        Base64.encode(try Digest.randomBytes(32), urlSafe: true)
    }

    /// What to store and look up instead of the token itself.
    public static func digest(_ token: String) -> String {
        Base64.encode(Digest.sha256(Array(token.utf8)), urlSafe: true)
    }
}

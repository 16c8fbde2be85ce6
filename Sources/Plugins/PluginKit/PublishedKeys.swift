// SPDX-License-Identifier: Apache-2.0
import Bus
import Crypto
import HTTP

/// A provider's published signing keys (a JWK set: Apple's and Google's sign-in keys, Google's
/// keys for Pub/Sub pushes), cached for as long as the provider says (`Cache-Control: max-age`
/// minus `Age`), fetched again when a token names a key id the set does not have (a rotation),
/// one fetch at a time and at most one per `minimumRefetchInterval`. When a fetch fails the last
/// good set is kept, up to `maximumStaleness` past its expiry; with no usable set, verification
/// fails closed. With a warm cache a verification makes no network call.
public actor PublishedKeys {
    /// A fetched key document and how long it may be used.
    public struct Document: Sendable {
        public var body: [UInt8]
        public var lifetime: Duration?
        public init(body: [UInt8], lifetime: Duration?) {
            self.body = body
            self.lifetime = lifetime
        }
    }
    public typealias Fetch = @Sendable (_ url: String) async throws -> Document

    /// How the keys are fetched and kept.
    public struct Settings: Sendable {
        public var url: String
        /// Used when the provider's answer says nothing about caching.
        public var defaultLifetime: Duration = .seconds(3600)
        public var minimumRefetchInterval: Duration = .seconds(5)
        public var maximumStaleness: Duration = .seconds(24 * 3600)
        public var fetchTimeout: Duration = .seconds(10)
        public init(url: String) { self.url = url }
    }

    /// Why no key can be given.
    public enum Failure: Error, Sendable, Equatable {
        /// No set could be fetched, or the last one is too old to trust.
        case unavailable
        /// The set does not have the token's key id.
        case unknownKey
    }

    private let settings: Settings
    /// Who the keys are for, in log lines (`apple`, `google`, `google play pushes`).
    private let name: String
    private let fetch: Fetch
    private let logger: Logger

    private var set: JSONWebKeySet?
    private var expiresAt: Int64 = 0
    private var lastAttempt: Int64?
    private var inFlight: Task<Void, Never>?

    public init(_ name: String, settings: Settings, fetch: @escaping Fetch, logger: Logger) {
        self.name = name
        self.settings = settings
        self.fetch = fetch
        self.logger = logger
    }

    /// The key that must have signed `jws`, fetching the set when it is missing, expired, or
    /// lacks the token's key id.
    public func key(for jws: CompactJWS, now: Int64) async throws(Failure) -> JSONWebKey {
        if let set, now < expiresAt, let key = set.key(id: jws.keyID) { return key }
        if let inFlight {
            await inFlight.value
        } else if mayFetch(now: now) {
            await refresh(now: now)
        }
        guard let set else { throw .unavailable }
        guard now < expiresAt || now - expiresAt <= settings.maximumStaleness.nanoseconds else {
            logger.error("the provider's keys are too old to trust and cannot be fetched", metadata: ["provider": "\(name)", "url": "\(settings.url)"])
            throw .unavailable
        }
        guard let key = set.key(id: jws.keyID) else { throw .unknownKey }
        return key
    }

    private func mayFetch(now: Int64) -> Bool {
        guard let lastAttempt else { return true }
        return now - lastAttempt >= settings.minimumRefetchInterval.nanoseconds
    }

    /// Fetches once for every caller waiting meanwhile; each resumes after the new set (or the
    /// failure) is in place. A failure keeps the last good set.
    private func refresh(now: Int64) async {
        lastAttempt = now
        // Awaited right here by every caller (through `inFlight`): it ends before `refresh` does.
        // Unstructured: one fetch shared by every concurrent caller (kept in `inFlight`), each awaiting it.
        let task = Task { await self.fetchAndInstall(now: now) }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private func fetchAndInstall(now: Int64) async {
        let (fetch, url) = (self.fetch, settings.url)
        do {
            let document = try await withTimeout(settings.fetchTimeout, timeoutError: { HTTPFailure(stage: .total, reason: "timed out") }) {
                try await fetch(url)
            }
            install(document, now: now)
        } catch {
            failed("\(error)")
        }
    }

    private func install(_ document: Document, now: Int64) {
        do {
            let parsed = try JSONWebKeySet(parsing: document.body)
            guard !parsed.keys.isEmpty else { return failed("the key set has no usable key") }
            set = parsed
            expiresAt = now + (document.lifetime ?? settings.defaultLifetime).nanoseconds
        } catch {
            failed("\(error)")
        }
    }

    private func failed(_ reason: String) {
        logger.warning(
            set == nil ? "cannot fetch the provider's keys" : "cannot fetch the provider's keys; the last good set stays in use",
            metadata: ["provider": "\(name)", "url": "\(settings.url)", "reason": "\(reason)"])
    }

    /// The default fetch: GET over HTTPS with appd's client (certificate and host name
    /// checked against the system store or `caFile`), 200 only, the lifetime from the
    /// response's caching headers.
    public static func https(caFile: String?, timeout: Duration) -> Fetch {
        { url in
            guard var request = HTTPRequest(url: url) else { throw HTTPFailure(stage: .connect, reason: "not an http(s) URL: \(url)") }
            request.method = "GET"
            request.headers = [("Accept", "application/json")]
            let (head, body) = try await HTTPClient.oneShot(limit: timeout, caFile: caFile).fetch(request)
            guard head.status == 200 else { throw HTTPFailure(stage: .response, reason: "status \(head.status)") }
            return Document(body: body, lifetime: lifetime(cacheControl: head.headers["cache-control"], age: head.headers["age"]))
        }
    }

    /// `max-age` minus `Age` (never below zero); `no-store` and `no-cache` are zero; nil
    /// when the headers say nothing.
    public static func lifetime(cacheControl: String?, age: String?) -> Duration? {
        guard let cacheControl else { return nil }
        var maxAge: Int64?
        for directive in cacheControl.lowercased().split(separator: ",") {
            let part = directive.trimmingWhitespace()
            if part == "no-store" || part == "no-cache" { return .zero }
            if part.hasPrefix("max-age="), let seconds = Int64(part.dropFirst(8)), seconds >= 0 { maxAge = seconds }
        }
        guard let maxAge else { return nil }
        let elapsed = age.flatMap { Int64($0.trimmingWhitespace()) }.map { max(0, $0) } ?? 0
        return .seconds(max(0, maxAge - elapsed))
    }
}

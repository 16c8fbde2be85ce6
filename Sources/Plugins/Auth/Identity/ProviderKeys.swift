// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Crypto
import HTTP

/// One provider's published signing keys, cached for as long as the provider says
/// (`Cache-Control: max-age` minus `Age`), fetched again when a token names a key id the set
/// does not have (a rotation), one fetch at a time and at most one per
/// `minimumRefetchInterval`. When a fetch fails the last good set is kept, up to
/// `maximumKeyStaleness` past its expiry; with no usable set, verification fails closed.
/// With a warm cache a sign-in makes no network call.
actor ProviderKeys {
    /// A fetched key document and how long it may be used.
    struct Document: Sendable {
        var body: [UInt8]
        var lifetime: Duration?
    }
    typealias Fetch = @Sendable (_ url: String) async throws -> Document

    private let provider: IdentityProvider
    private let url: String
    private let options: IdentityOptions
    private let fetch: Fetch
    private let logger = Logger(label: "appd.auth")

    private var set: JSONWebKeySet?
    private var expiresAt: Int64 = 0
    private var lastAttempt: Int64?
    private var inFlight: Task<Void, Never>?

    init(provider: IdentityProvider, options: IdentityOptions, fetch: @escaping Fetch) {
        self.provider = provider
        self.url = options[provider].keysURL
        self.options = options
        self.fetch = fetch
    }

    /// The key that must have signed `jws`, fetching the set when it is missing, expired, or
    /// lacks the token's key id.
    func key(for jws: CompactJWS, now: Int64) async throws(AuthError) -> JSONWebKey {
        if let set, now < expiresAt, let key = set.key(id: jws.keyID) { return key }
        if let inFlight {
            await inFlight.value
        } else if mayFetch(now: now) {
            await refresh(now: now)
        }
        guard let set else { throw AuthError.identityProviderUnavailable(provider) }
        guard now < expiresAt || now - expiresAt <= options.maximumKeyStaleness.nanoseconds else {
            logger.error("the provider's keys are too old to trust and cannot be fetched", metadata: ["provider": "\(provider.rawValue)", "url": "\(url)"])
            throw AuthError.identityProviderUnavailable(provider)
        }
        guard let key = set.key(id: jws.keyID) else { throw AuthError.invalidIdToken(reason: .unknownKey) }
        return key
    }

    private func mayFetch(now: Int64) -> Bool {
        guard let lastAttempt else { return true }
        return now - lastAttempt >= options.minimumRefetchInterval.nanoseconds
    }

    /// Fetches once for every caller waiting meanwhile; each resumes after the new set (or the
    /// failure) is in place. A failure keeps the last good set.
    private func refresh(now: Int64) async {
        lastAttempt = now
        let task = Task { await self.fetchAndInstall(now: now) }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private func fetchAndInstall(now: Int64) async {
        let (fetch, url) = (self.fetch, self.url)
        do {
            let document = try await withTimeout(options.fetchTimeout, timeoutError: { HTTPFailure(stage: .total, reason: "timed out") }) {
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
            expiresAt = now + (document.lifetime ?? options.defaultKeyLifetime).nanoseconds
        } catch {
            failed("\(error)")
        }
    }

    private func failed(_ reason: String) {
        logger.warning(
            set == nil ? "cannot fetch the provider's keys" : "cannot fetch the provider's keys; the last good set stays in use",
            metadata: ["provider": "\(provider.rawValue)", "url": "\(url)", "reason": "\(reason)"])
    }

    /// The default fetch: GET over HTTPS with appd's client (certificate and host name
    /// checked against the system store or `caFile`), 200 only, the lifetime from the
    /// response's caching headers.
    static func https(caFile: String?, timeout: Duration) -> Fetch {
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
    static func lifetime(cacheControl: String?, age: String?) -> Duration? {
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

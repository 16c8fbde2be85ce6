// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// appd's HTTP API for a Swift app: every method of every built-in interface as a typed call,
/// built from the same contract types the server implements.
///
/// ```swift
/// let appd = AppdClient(baseURL: URL(string: "https://api.example.com")!, tokenStore: KeychainTokenStore())
/// _ = try await appd.call(AuthInterface.SignIn(email: email, password: password))  // the session is kept
/// let todo = try await appd.call(TodosInterface.Add(title: "buy milk")).todo
/// for try await reply in appd.stream(ChatInterface.Send(conversationId: id, text: "hi")) { … }
/// ```
///
/// A method's errors are thrown as its interface's typed error (`TodosError.notFound`,
/// `PaymentsError.paymentRequired(entitlement:remaining:resetsAt:)`); anything else as
/// `AppdClientError`. Calls that need a signed-in user carry the session's access token, which
/// `sessions` refreshes before it expires. Cancelling the calling task cancels the request.
public final class AppdClient: Sendable {
    /// The server, without `/v1` (`https://api.example.com`).
    public let baseURL: URL
    public let sessions: SessionManager
    let retry: RetryPolicy
    let configuration: URLSessionConfiguration
    let urlSession: URLSession

    public init(
        baseURL: URL, tokenStore: any TokenStore = InMemoryTokenStore(), configuration: URLSessionConfiguration = .default,
        retry: RetryPolicy = RetryPolicy(), refreshMargin: Duration = .seconds(60)
    ) {
        self.baseURL = baseURL
        self.sessions = SessionManager(store: tokenStore, margin: refreshMargin)
        self.retry = retry
        self.configuration = Self.withoutCacheWhereCancellingTraps(configuration)
        self.urlSession = URLSession(configuration: self.configuration)
    }

    /// swift-corelibs-foundation (Linux) looks a request up in the session's `URLCache` on a
    /// background queue before the task has a protocol; a cancel landing in that window (the
    /// calling task cancelled, a stream stopped) reports its failure after the task left the
    /// session's registry, which is a fatal error in Foundation. Without a cache that window does
    /// not exist. appd's replies are not cacheable anyway (calls are POSTs; files carry ETags the
    /// client checks itself). Apple's Foundation keeps the configuration as given.
    static func withoutCacheWhereCancellingTraps(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        #if canImport(FoundationNetworking)
        let copy = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        copy.urlCache = nil
        copy.requestCachePolicy = .reloadIgnoringLocalCacheData
        return copy
        #else
        return configuration
        #endif
    }

    deinit { urlSession.finishTasksAndInvalidate() }

    /// Calls `command` and returns its reply. An idempotent method is sent with
    /// `idempotencyKey` (a fresh one when nil), and retried with that key when the network
    /// fails or appd is busy; its effect happens once. A read (`readsOnly`) is retried the same
    /// way; any other call is sent once. Cancelling the task stops the retries.
    public func call<C: Command>(_ command: C, idempotencyKey: String? = nil) async throws -> C.Reply {
        let body = try encode(command)
        let key = C.requirements.contains(.idempotent) ? (idempotencyKey ?? UUID().uuidString.lowercased()) : nil
        // Sent again only when that cannot do anything twice: a read, or a write with its key.
        let repeatable = key != nil || C.readsOnly
        let signedIn = C.requirements.contains { $0.needsUser }
        var attempt = 0
        var refreshed = false
        while true {
            try Task.checkCancellation()
            let token = signedIn ? try await sessions.accessToken(refresh) : nil
            let response: Response
            do {
                response = try await send(C.method, body: body, token: token, idempotencyKey: key)
            } catch let error as URLError where error.code != .cancelled {
                guard repeatable, attempt < retry.retries else { throw AppdClientError.transport("\(error.localizedDescription)") }
                attempt += 1
                try await Task.sleep(for: retry.delay(attempt: attempt, retryAfter: nil))
                continue
            }
            if response.status == 200 {
                let reply = try decode(C.Reply.self, from: response.body)
                await adoptSession(of: command, reply)
                return reply
            }
            let json = try? JSONParser.parse(response.body)
            let name = json?["error"]?.stringValue
            if response.status == 401, let token, !refreshed {
                refreshed = true
                _ = try await sessions.refreshed(replacing: token, refresh)
                continue
            }
            if repeatable, attempt < retry.retries, RetryPolicy.isRetryable(status: response.status, error: name) {
                attempt += 1
                try await Task.sleep(for: retry.delay(attempt: attempt, retryAfter: response.headers["retry-after"]))
                continue
            }
            throw WireErrors.error(status: response.status, body: json)
        }
    }

    /// The auth state now, then every change: `signedOut`, `signedIn(user)`, or
    /// `sessionEnded(reason)` when appd refused to refresh the session (signed out elsewhere,
    /// password changed, account deleted or disabled). A `SessionController` routes on it.
    public func authStates() async -> AsyncStream<AuthState> {
        await sessions.states()
    }

    /// Signs out: ends the session on appd (best effort: a network failure still forgets it
    /// here) and clears the token store.
    public func signOut() async {
        if await sessions.current != nil { _ = try? await call(AuthInterface.SignOut()) }
        await sessions.clear()
    }

    // MARK: - The wire

    struct Response: Sendable {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
    }

    func request(_ method: String, body: [UInt8], token: String?, idempotencyKey: String?, accept: String = "application/json") throws -> URLRequest {
        guard let (interface, name) = method.methodNameParts else { throw AppdClientError.unexpectedReply("'\(method)' is not a method name") }
        var request = URLRequest(url: baseURL.appendingPathComponent("v1").appendingPathComponent(String(interface)).appendingPathComponent(String(name)))
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(accept, forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        return request
    }

    private func send(_ method: String, body: [UInt8], token: String?, idempotencyKey: String?) async throws -> Response {
        try await exchange(try request(method, body: body, token: token, idempotencyKey: idempotencyKey))
    }

    /// Sends `request` and reads the whole answer.
    func exchange(_ request: URLRequest) async throws -> Response {
        let (data, response) = try await DataExchange.data(for: request, in: urlSession)
        guard let http = response as? HTTPURLResponse else { throw AppdClientError.unexpectedReply("not an HTTP response") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return Response(status: http.statusCode, headers: headers, body: Array(data))
    }

    /// The refresh the session manager runs: `Auth.Refresh` with the refresh token, no retry
    /// (a refresh token is spent by its first use; appd keeps a short reuse interval for a
    /// lost reply, and the manager never presents a spent one twice).
    var refresh: @Sendable (String) async throws -> Session {
        { [weak self] refreshToken in
            guard let self else { throw CancellationError() }
            let body = try self.encode(AuthInterface.Refresh(refreshToken: refreshToken))
            let response = try await self.send(AuthInterface.Refresh.method, body: body, token: nil, idempotencyKey: nil)
            guard response.status == 200 else { throw WireErrors.error(status: response.status, body: try? JSONParser.parse(response.body)) }
            return try self.decode(AuthInterface.Refresh.Reply.self, from: response.body).session
        }
    }

    /// Replies that carry a session make it the one in use, and those that carry the signed-in
    /// user (`WhoAmI`, `CompleteOnboarding`, `UpdateProfile`, `SetAvatar`, `UpgradeGuest`) update it; signing
    /// out forgets it.
    private func adoptSession<C: Command>(of command: C, _ reply: C.Reply) async {
        if let session = (reply as? any CarriesSession)?.newSession {
            await sessions.adopt(session)
        } else if let user = (reply as? AuthInterface.UserReply)?.user, C.method.hasPrefix("io.appd.Auth.") {
            await sessions.update(user)
        } else if C.self == AuthInterface.SignOut.self || C.self == AuthInterface.SignOutEverywhere.self || C.self == AuthInterface.DeleteAccount.self {
            await sessions.clear()
        }
    }

    func encode(_ value: some Encodable) throws -> [UInt8] {
        JSONWriter.bytes(try JSONValue(encoding: value))
    }

    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        do {
            return try JSONParser.parse(bytes).decode(as: T.self)
        } catch {
            throw AppdClientError.unexpectedReply("\(T.self): \(error)")
        }
    }
}

extension Requirement {
    /// Whether the requirement is about the signed-in user (the call carries the session).
    var needsUser: Bool {
        switch self {
        case .session, .onboarded, .verifiedEmail, .entitlement, .meter: true
        case .admin, .capability, .idempotent, .socket, .clientRateLimited: false
        }
    }
}

/// A reply that signs in: its session becomes the client's.
protocol CarriesSession {
    var newSession: Session? { get }
}

extension AuthInterface.SignUpReply: CarriesSession { var newSession: Session? { session } }
extension AuthInterface.SessionReply: CarriesSession { var newSession: Session? { session } }
extension AuthInterface.IdTokenSession: CarriesSession { var newSession: Session? { session } }

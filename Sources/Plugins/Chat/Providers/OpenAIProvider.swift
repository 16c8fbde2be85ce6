// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import HTTP

/// Any OpenAI-compatible Chat Completions endpoint with `"stream": true` (OpenAI, llama.cpp's
/// server, Ollama's `/v1`, vLLM). Retries only before the first token, only on 408, 409, 429
/// and 5xx, honouring `Retry-After`, at most `maxRetries` times. A mid-stream error object
/// fails the reply; a missing `[DONE]` at the end of the stream is accepted.
public struct OpenAIProvider: LLMProvider {
    public struct Options: Sendable {
        /// e.g. `https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`, `http://127.0.0.1:11434/v1`.
        public var baseURL: String
        public var model: String
        public var apiKey: String?
        public var timeouts = HTTPTimeouts()
        public var maxRetries = 2
        /// The longest a Retry-After is honoured.
        public var maxRetryDelay: Duration = .seconds(30)
        public var caFile: String?
        public init(baseURL: String, model: String, apiKey: String? = nil) {
            self.baseURL = baseURL
            self.model = model
            self.apiKey = apiKey
        }
    }

    let options: Options
    let request: HTTPRequest
    public var name: String { "openai" }

    /// Fails when the base URL is not an http(s) URL, or sends an API key in clear text to a
    /// host other than this machine.
    public init(options: Options) throws(ProviderError) {
        guard let request = HTTPRequest(url: options.baseURL, appending: "/chat/completions") else {
            throw ProviderError("the chat provider URL '\(options.baseURL)' is not an http:// or https:// URL")
        }
        if !request.tls, let key = options.apiKey, !key.isEmpty, !Self.isLoopback(request.host) {
            throw ProviderError(
                "refusing to send the chat API key in clear text to \(request.host): use an https:// chatBaseURL (http:// is for a provider on this machine)")
        }
        self.options = options
        self.request = request
    }

    /// Whether a host name or address means this machine.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        // 127.0.0.0/8 as a dotted literal (not a name such as 127.example.com).
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil } && parts[0] == "127"
    }

    func body(_ turns: [ChatTurn], _ replyOptions: ReplyOptions = ReplyOptions()) -> [UInt8] {
        var body: [String: JSONValue] = [
            "model": .string(replyOptions.model ?? options.model), "stream": true, "stream_options": ["include_usage": true],
            "messages": .array(turns.map { ["role": .string($0.role.rawValue), "content": Self.content(of: $0)] }),
        ]
        if let temperature = replyOptions.temperature { body["temperature"] = .double(temperature) }
        return JSONWriter.bytes(.object(body))
    }

    /// A turn's `content`: its text, or with images the parts of the Chat Completions API
    /// (a `text` part, then an `image_url` part per image).
    static func content(of turn: ChatTurn) -> JSONValue {
        guard !turn.images.isEmpty else { return .string(turn.text) }
        return .array([["type": "text", "text": .string(turn.text)]] + turn.images.map { ["type": "image_url", "image_url": ["url": .string($0)]] })
    }

    public func reply(to turns: [ChatTurn], options replyOptions: ReplyOptions, stop: StopSignal?, chunk: (ProviderChunk) async throws -> Void) async throws {
        var request = self.request
        request.headers = [("Content-Type", "application/json"), ("Accept", "text/event-stream"), ("User-Agent", "appd/\(Version.current)")]
        if let key = options.apiKey, !key.isEmpty { request.headers.append(("Authorization", "Bearer \(key)")) }
        request.body = body(turns, replyOptions)
        let client = HTTPClient(timeouts: options.timeouts, caFile: options.caFile)
        var attempt = 0
        while true {
            var sentToken = false
            do {
                try await attemptOnce(request, client, stop) { piece in
                    // Parts read before a stop may still be in the stream: none is handed on.
                    if stop?.isStopped == true { throw StopSignal.Stopped() }
                    if case .delta = piece { sentToken = true }
                    try await chunk(piece)
                }
                return
            } catch let error as Retryable {
                guard !sentToken && attempt < options.maxRetries && !Task.isCancelled && stop?.isStopped != true else { throw ProviderError(error.reason) }
                attempt += 1
                try await Task.sleep(for: error.retryAfter.map { min($0, options.maxRetryDelay) } ?? .milliseconds(250 * (1 << attempt)))
                if stop?.isStopped == true { throw StopSignal.Stopped() }
            } catch let error as HTTPFailure {
                throw Task.isCancelled ? CancellationError() : ProviderError(error.description)
            }
        }
    }

    /// A response that may be retried (before any token): 408, 409, 429, 5xx.
    struct Retryable: Error {
        var reason: String
        var retryAfter: Duration?
    }

    private func attemptOnce(_ request: HTTPRequest, _ client: HTTPClient, _ stop: StopSignal?, yield: (ProviderChunk) async throws -> Void) async throws {
        var parser = SSEParser()
        var status = 0
        var errorBody: [UInt8] = []
        var retryAfter: Duration?
        for try await part in client.send(request, stop: stop) {
            switch part {
            case .head(let head):
                status = head.status
                if let value = head.headers["retry-after"], let seconds = Int(value.trimmingWhitespace()), seconds >= 0 { retryAfter = .seconds(seconds) }
            case .body(let bytes):
                if status != 200 {
                    if errorBody.count < 4096 { errorBody += bytes.prefix(4096 - errorBody.count) }
                    continue
                }
                for event in try parser.feed(bytes) {
                    if try await handle(event, yield) { return }
                }
            }
        }
        try Task.checkCancellation()
        guard status == 200 else {
            let message = Self.errorMessage(errorBody).map { ": \($0)" } ?? ""
            let reason = "the provider answered HTTP \(status)\(message)"
            if status == 408 || status == 409 || status == 429 || (500...599).contains(status) { throw Retryable(reason: reason, retryAfter: retryAfter) }
            throw ProviderError(reason)
        }
        // The stream ended without [DONE]: what arrived is the reply.
        for event in parser.finish() {
            if try await handle(event, yield) { return }
        }
    }

    /// Handles one event; true at `[DONE]`.
    private func handle(_ event: SSEParser.Event, _ yield: (ProviderChunk) async throws -> Void) async throws -> Bool {
        let data = event.data.trimmingWhitespace()
        if data == "[DONE]" { return true }
        guard let json = try? JSONParser.parse(Array(data.utf8)) else { return false }  // tolerate keep-alive junk
        if let error = json["error"], error != .null {
            throw ProviderError("the provider reported an error mid-stream: \(error["message"]?.stringValue ?? "unknown")")
        }
        if case .array(let choices)? = json["choices"], let choice = choices.first,
            let text = choice["delta"]?["content"]?.stringValue, !text.isEmpty
        {
            try await yield(.delta(text))
        }
        if let usage = json["usage"], case .int(let prompt)? = usage["prompt_tokens"], case .int(let completion)? = usage["completion_tokens"] {
            try await yield(.usage(promptTokens: Int(prompt), completionTokens: Int(completion)))
        }
        return false
    }

    static func errorMessage(_ body: [UInt8]) -> String? {
        guard let json = try? JSONParser.parse(body) else { return nil }
        return json["error"]?["message"]?.stringValue ?? json["error"]?.stringValue
    }
}

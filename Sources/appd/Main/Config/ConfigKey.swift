// SPDX-License-Identifier: Apache-2.0
import Bus
import HTTP
import Storage
import PluginKit
import Chat
import Payments
import ExternalPlugins

/// One configuration key: its name in the JSON file, its environment variable and flag, and
/// how a value is checked and applied. The one table every source goes through.
struct ConfigKey: Sendable {
    let name: String
    let flag: String
    let help: String
    /// A secret: never printed (`--print-config` shows whether it is set).
    var secret = false
    let apply: @Sendable (inout AppdConfig, JSONValue) throws(ConfigProblem) -> Void

    init(name: String, flag: String, help: String, secret: Bool = false, apply: @escaping @Sendable (inout AppdConfig, JSONValue) throws(ConfigProblem) -> Void) {
        self.name = name
        self.flag = flag
        self.help = help
        self.secret = secret
        self.apply = apply
    }

    /// `maxConnections` → `APPD_MAX_CONNECTIONS`.
    var environment: String {
        var out = "APPD_"
        for (i, ch) in name.enumerated() {
            if ch.isUppercase && i > 0 && !(name[name.index(name.startIndex, offsetBy: i - 1)].isUppercase) { out += "_" }
            out += ch.uppercased()
        }
        return out
    }

    static let all: [ConfigKey] =
        [
            text("socket", "--socket", "The control socket.") { $0.socket = $1 },
            text("dataDirectory", "--data-dir", "Where the database lives.") { $0.dataDirectory = $1 },
            ConfigKey(
                name: "database", flag: "--database",
                help:
                    "sqlite (default: <data dir>/appd.db), or a PostgreSQL URL postgres://user:password@host:port/db?sslmode=… shared by several instances (secret: the "
                    + "password; prefer the environment).",
                secret: true
            ) { config, value throws(ConfigProblem) in
                guard let text = value.stringValue, !text.isEmpty else { throw ConfigProblem("needs sqlite or a postgres:// URL") }
                if text == "sqlite" { config.database = nil; return }
                guard PostgresURL.isPostgres(text) else { throw ConfigProblem("needs sqlite or a postgres:// URL (postgresql:// and libpq's key=value form work too)") }
                config.database = text
            },
            ConfigKey(name: "databaseReadConnections", flag: "--database-read-connections", help: "PostgreSQL: connections (and threads) for reads (default: 4).") {
                config, value throws(ConfigProblem) in
                guard case .int(let n) = value, n >= 1, n <= 64 else { throw ConfigProblem("needs a whole number from 1 to 64") }
                config.databaseReadConnections = Int(n)
            },
            ConfigKey(name: "adminGroup", flag: "--admin-group", help: "Members may call admin methods; the socket becomes 0660.") { config, value throws(ConfigProblem) in
                if value == .null { config.adminGroup = nil; return }
                guard let name = value.stringValue, !name.isEmpty else { throw ConfigProblem("needs a group name") }
                config.adminGroup = name
            },
            ConfigKey(name: "logLevel", flag: "--log-level", help: "trace, debug, info, notice, warning, error or critical.") { config, value throws(ConfigProblem) in
                guard let name = value.stringValue, let level = LogLevel(name: name) else {
                    throw ConfigProblem("needs one of trace, debug, info, notice, warning, error, critical")
                }
                config.logLevel = level
            },
            integer("maxMessageBytes", "--max-message-bytes", "Largest message (at most 16777216).") { $0.limits.maxMessageBytes = $1 },
            integer("maxConnections", "--max-connections", "Connections in total.") { $0.limits.maxConnections = $1 },
            integer("maxConnectionsPerUID", "--max-connections-per-uid", "Connections per user id.") { $0.limits.maxConnectionsPerUID = $1 },
            integer("maxConnectionsPerPlugin", "--max-connections-per-plugin", "Connections on each external plugin's own socket (default: 16).") {
                $0.limits.maxConnectionsPerPlugin = $1
            },
            integer("maxQueuedCalls", "--max-queued-calls", "Unanswered calls per connection before reading pauses.") { $0.limits.maxQueuedCalls = $1 },
            integer("maxPendingOutputBytes", "--max-pending-output", "Unread reply bytes before a client is dropped.") { $0.limits.maxPendingOutputBytes = $1 },
            seconds("firstMessageTimeoutSeconds", "--first-message-timeout", "Seconds a new connection has to send a message.") { $0.limits.firstMessageTimeout = $1 },
            seconds("callTimeoutSeconds", "--call-timeout", "Seconds a call may take.") { $0.limits.callTimeout = $1 },
            seconds("drainTimeoutSeconds", "--drain-timeout", "Seconds shutdown waits for in-flight calls.") { $0.limits.drainTimeout = $1 },
            seconds("stalledStreamTimeoutSeconds", "--stalled-stream-timeout", "Seconds a stream may wait on a client that reads nothing.") {
                $0.limits.stalledStreamTimeout = $1
            },
            seconds("idleWorkerSeconds", "--idle-worker-seconds", "Seconds a connection's worker waits for a call before it ends (default: 1).") {
                $0.limits.idleWorkerRetirement = $1
            },
            optionalInteger("eventRetentionDays", "--event-retention-days", "Prune events older than this (default: 90; null keeps them).") { $0.eventRetentionDays = $1 },
            optionalInteger("eventRetentionCount", "--event-retention-count", "Keep at most this many events (default: all).") { $0.eventRetentionCount = $1 },
            integer("accessTokenSeconds", "--access-token-seconds", "How long an access token lasts (default: 3600).") { $0.accessTokenSeconds = $1 },
            integer("refreshTokenDays", "--refresh-token-days", "How long a refresh token lasts (default: 30).") { $0.refreshTokenDays = $1 },
            ConfigKey(
                name: "sessionCacheEntries", flag: "--session-cache-entries",
                help: "Resolved sessions kept in memory (default: 10000; 0 turns the cache off)."
            ) { config, value throws(ConfigProblem) in
                guard case .int(let n) = value, n >= 0, n <= 10_000_000 else { throw ConfigProblem("needs a whole number from 0 to 10000000") }
                config.sessionCacheEntries = Int(n)
            },
            ConfigKey(name: "disabledPlugins", flag: "--disable-plugins", help: "Plugins not to start (comma-separated).") { config, value throws(ConfigProblem) in
                switch value {
                case .array(let names):
                    let strings = names.compactMap(\.stringValue)
                    guard strings.count == names.count else { throw ConfigProblem("needs a list of plugin names") }
                    config.disabledPlugins = strings
                case .string(let text):
                    config.disabledPlugins = text.split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }.filter { !$0.isEmpty }
                default:
                    throw ConfigProblem("needs a list of plugin names")
                }
            },
            ConfigKey(name: "paymentsProducts", flag: "--payments-products", help: "Products: id=entitlement/period,… (period: day, week, month, year, lifetime).") {
                config, value throws(ConfigProblem) in
                guard let text = value.stringValue else { throw ConfigProblem("needs a string like pro_monthly=pro/month,pro_lifetime=pro/lifetime") }
                do throws(CatalogProblem) {
                    let products = try PaymentsCatalog.parseProducts(text)
                    config.payments.catalog = PaymentsCatalog(products: products, entitlements: config.payments.catalog.entitlements, meters: config.payments.catalog.meters)
                } catch { throw ConfigProblem(error.description) }
            },
            ConfigKey(name: "paymentsMeters", flag: "--payments-meters", help: "Free quotas: name=limit/period/entitlement,… (default chat.messages=10/day/pro).") {
                config, value throws(ConfigProblem) in
                guard let text = value.stringValue else { throw ConfigProblem("needs a string like chat.messages=10/day/pro") }
                do throws(CatalogProblem) {
                    let meters = try PaymentsCatalog.parseMeters(text)
                    config.payments.catalog = PaymentsCatalog(products: config.payments.catalog.products, entitlements: config.payments.catalog.entitlements, meters: meters)
                } catch { throw ConfigProblem(error.description) }
            },
            ConfigKey(
                name: "revenuecatWebhookSecret", flag: "--revenuecat-webhook-secret", help: "The Authorization value RevenueCat sends (secret; prefer the environment).",
                secret: true
            ) { config, value throws(ConfigProblem) in
                if value == .null { config.payments.revenueCatSecret = nil; return }
                guard let text = value.stringValue, text.utf8.count >= 8 else { throw ConfigProblem("needs a secret of at least 8 characters") }
                config.payments.revenueCatSecret = text
            },
            ConfigKey(
                name: "revenuecatApiKey", flag: "--revenuecat-api-key",
                help: "RevenueCat's secret API key (sk_…): Restore asks RevenueCat for the subscriber (secret; prefer the environment).", secret: true
            ) { config, value throws(ConfigProblem) in
                if value == .null { config.payments.revenueCatAPIKey = nil; return }
                guard let text = value.stringValue, text.utf8.count >= 8, !text.contains(where: \.isWhitespace) else { throw ConfigProblem("needs RevenueCat's secret API key") }
                config.payments.revenueCatAPIKey = text
            },
            https("revenuecatApiUrl", "--revenuecat-api-url", "RevenueCat's REST API (default: https://api.revenuecat.com/v1).") { $0.payments.revenueCatAPIURL = $1 },
            text("revenuecatCaFile", "--revenuecat-ca-file", "Trusted CA certificates (PEM) for RevenueCat's API instead of the system store.") {
                $0.payments.revenueCatCAFile = $1
            },
        ] + stores + [
            list("stripeWebhookSecrets", "--stripe-webhook-secrets", "Stripe endpoint signing secrets, comma-separated (secret; prefer the environment).", secret: true) {
                secret throws(ConfigProblem) in
                guard secret.utf8.count >= 8 else { throw ConfigProblem("each secret needs at least 8 characters") }
            } set: {
                $0.payments.stripeSecrets = $1
            },
            ConfigKey(
                name: "httpListen", flag: "--http-listen",
                help: "The app-facing HTTP API (and webhooks) on host:port, e.g. 127.0.0.1:8080; put a TLS proxy in front (default: off)."
            ) { config, value throws(ConfigProblem) in
                if value == .null { config.httpListen = nil; return }
                guard let text = value.stringValue, (try? HTTPListenAddress(text)) != nil else { throw ConfigProblem("needs host:port, e.g. 127.0.0.1:8080 or [::1]:8080") }
                config.httpListen = text
            },
            list("httpAllowedOrigins", "--http-allowed-origins", "Origins browsers may call the HTTP API from, e.g. https://app.example.com, or * (default: none).") {
                origin throws(ConfigProblem) in
                guard origin == "*" || ((origin.hasPrefix("https://") || origin.hasPrefix("http://")) && !origin.dropFirst(8).contains("/")) else {
                    throw ConfigProblem("needs origins like https://app.example.com (scheme and host, no path), or *")
                }
            } set: {
                $0.http.allowedOrigins = Set($1)
            },
            list("httpTrustedProxies", "--http-trusted-proxies", "Proxy addresses whose X-Forwarded-For names the client, e.g. 127.0.0.1 (default: none).") {
                address throws(ConfigProblem) in
                guard (try? HTTPListenAddress("[\(address)]:1")) != nil || (try? HTTPListenAddress("\(address):1")) != nil else {
                    throw ConfigProblem("needs IP addresses like 127.0.0.1 or ::1")
                }
            } set: {
                $0.http.trustedProxies = Set($1)
            },
            ConfigKey(
                name: "httpRateLimitPerMinute", flag: "--http-rate-limit-per-minute",
                help: "Sign-up, sign-in and password-reset calls per client address and minute over HTTP; 0 turns it off (default: 30)."
            ) { config, value throws(ConfigProblem) in
                guard case .int(let n) = value, n >= 0, n <= 1_000_000 else { throw ConfigProblem("needs a whole number from 0 to 1000000") }
                config.http.rateLimitPerMinute = Int(n)
            },
            integer("httpMaxBodyBytes", "--http-max-body-bytes", "Largest HTTP request body (default: 1048576).") { $0.http.limits.maxBodyBytes = $1 },
            integer("httpMaxHeaderBytes", "--http-max-header-bytes", "Largest HTTP request head (default: 16384).") { $0.http.limits.maxHeadBytes = $1 },
            integer("httpMaxConnections", "--http-max-connections", "Open HTTP connections (default: 1024).") { $0.http.limits.maxConnections = $1 },
            integer("httpMaxStreams", "--http-max-streams", "Open event streams over HTTP (default: 256).") { $0.http.limits.maxStreams = $1 },
            integer("httpMaxStreamsPerClient", "--http-max-streams-per-client", "Open event streams per client address or IPv6 /64 (default: 16).") {
                $0.http.maxStreamsPerClient = $1
            },
            wholeNumber(
                "accountCallsPerMinute", "--account-calls-per-minute", "Calls one signed-in account may make a minute, both transports (default: 1200; 0: no limit).", 0...1_000_000
            ) {
                $0.accountCallsPerMinute = $1
            },
            integer("accountCallBurst", "--account-call-burst", "Calls an account may make at once before the per-minute rate applies (default: 300).") {
                $0.accountCallBurst = $1
            },
            seconds(
                "sharedLimitsSeconds", "--shared-limits-seconds",
                "With several instances on one PostgreSQL: how often each settles the account and HTTP rate limits with the others (default: 1; the slack grows with it)."
            ) { $0.sharedLimitsInterval = $1 },
            wholeNumber(
                "listenBacklog", "--listen-backlog",
                "Connections the control socket and the HTTP listeners queue before appd accepts them: a fleet reconnecting at once (default: 0, the kernel's net.core.somaxconn).",
                0...65535
            ) { $0.listenBacklog = $1 },
            integer("todosPerUser", "--todos-per-user", "Todos one account may hold (default: 10000).") { $0.todosPerUser = $1 },
            wholeNumber(
                "accountStorageMB", "--account-storage-mb", "MiB of text one account may keep: its todos, chats and memories together (default: 100; 0: no limit).", 0...1_048_576
            ) {
                $0.accountStorageMB = $1
            },
            integer("exportEventsMB", "--export-events-mb", "MiB of event payloads one data export carries at most, oldest first (default: 8).") {
                $0.exportEventsMB = min($1, 4096)
            },
            integer("chatConversationsPerUser", "--chat-conversations-per-user", "Chat conversations one account may hold (default: 1000).") {
                $0.chat.maxConversationsPerUser = $1
            },
            integer("subscribeMaxTopics", "--subscribe-max-topics", "Topics or patterns in one Subscribe (default: 64).") { $0.subscribe.maxTopics = $1 },
            integer("streamsPerAccount", "--streams-per-account", "Event streams one account holds open, both transports (default: 8).") {
                $0.subscribe.maxStreamsPerAccount = $1
            },
            seconds("streamSessionRecheckSeconds", "--stream-session-recheck-seconds", "How often a user's event stream checks its session again (default: 30).") {
                $0.subscribe.sessionRecheck = $1
            },
            seconds("streamMaxLifetimeSeconds", "--stream-max-lifetime-seconds", "Longest life of a user's event stream; it resumes with since (default: 3600).") {
                $0.subscribe.maxUserStreamLifetime = $1
            },
            seconds("httpKeepAliveSeconds", "--http-keep-alive-seconds", "Idle time before a keep-alive connection is closed (default: 75).") {
                $0.http.limits.keepAliveTimeout = $1
            },
            seconds("httpRequestTimeoutSeconds", "--http-request-timeout-seconds", "Time for a whole request to arrive (default: 10).") {
                $0.http.limits.requestTimeout = $1
            },
            seconds("httpCallTimeoutSeconds", "--http-call-timeout-seconds", "A call's deadline over HTTP, 504 past it (default: 30).") { $0.http.callTimeout = $1 },
            integer("maxWebhookBytes", "--max-webhook-bytes", "Largest webhook body (default: 262144).") { $0.payments.maxWebhookBytes = $1 },
            ConfigKey(name: "chatProvider", flag: "--chat-provider", help: "echo (built in, no network) or openai (any OpenAI-compatible endpoint).") {
                config, value throws(ConfigProblem) in
                guard let name = value.stringValue, ["echo", "openai"].contains(name) else { throw ConfigProblem("needs echo or openai") }
                config.chatProvider = name
            },
            ConfigKey(name: "chatBaseURL", flag: "--chat-base-url", help: "The OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (default: https://api.openai.com/v1).") {
                config, value throws(ConfigProblem) in
                guard let url = value.stringValue, (try? OpenAIProvider(options: .init(baseURL: url, model: ""))) != nil else {
                    throw ConfigProblem("needs an http:// or https:// URL like http://127.0.0.1:8080/v1")
                }
                config.chatBaseURL = url
            },
            text("chatModel", "--chat-model", "The model name sent to the endpoint (default: gpt-4o-mini).") { $0.chatModel = $1 },
            list("chatModels", "--chat-models", "Models a Send may ask for besides chatModel, comma-separated; model=entitlement needs that entitlement, e.g. gpt-4o=pro.") {
                item throws(ConfigProblem) in
                guard ChatModels.parse(item) != nil else { throw ConfigProblem("'\(item)' is not a model name or model=entitlement") }
            } set: {
                $0.chatModels = $1.compactMap(ChatModels.parse)
            },
            integer("chatMemoryCharacters", "--chat-memory-characters", "Characters of the user's memories sent with each message (default: 2000).") {
                $0.chat.memoryCharacters = $1
            },
            ConfigKey(name: "chatApiKey", flag: "--chat-api-key", help: "The endpoint's API key (secret; prefer APPD_CHAT_API_KEY).", secret: true) {
                config, value throws(ConfigProblem) in
                if value == .null { config.chatAPIKey = nil; return }
                guard let key = value.stringValue else { throw ConfigProblem("needs a string") }
                config.chatAPIKey = key.isEmpty ? nil : key
            },
            ConfigKey(name: "chatSystemPrompt", flag: "--chat-system-prompt", help: "Sent before every conversation (empty: none).") { config, value throws(ConfigProblem) in
                if value == .null { config.chat.systemPrompt = nil; return }
                guard let text = value.stringValue else { throw ConfigProblem("needs a string") }
                config.chat.systemPrompt = text.isEmpty ? nil : text
            },
            integer("chatContextCharacters", "--chat-context-characters", "Recent history sent with each message, in characters (default: 12000).") {
                $0.chat.contextCharacters = $1
            },
            ConfigKey(name: "chatMeter", flag: "--chat-meter", help: "The free quota Send uses (default: chat.messages; empty: unmetered).") {
                config, value throws(ConfigProblem) in
                if value == .null { config.chat.meter = nil; return }
                guard let text = value.stringValue else { throw ConfigProblem("needs a meter name") }
                config.chat.meter = text.isEmpty ? nil : text
            },
            ConfigKey(
                name: "chatImageBaseURL", flag: "--chat-image-base-url",
                help: "appd's public https address: chat images reach the model as signed URLs under it (default: none, as data: URLs)."
            ) { config, value throws(ConfigProblem) in
                if value == .null { config.chat.imageBaseURL = nil; return }
                guard let text = value.stringValue else { throw ConfigProblem("needs a URL such as https://api.example.com") }
                if text.isEmpty { config.chat.imageBaseURL = nil; return }
                guard text.hasPrefix("https://") || text.hasPrefix("http://"), !text.dropFirst(8).contains("?"), !text.contains("#") else {
                    throw ConfigProblem("needs an http(s) URL without a query, such as https://api.example.com")
                }
                config.chat.imageBaseURL = text.hasSuffix("/") ? String(text.dropLast()) : text
            },
            integer("chatEchoDelayMilliseconds", "--chat-echo-delay-ms", "The echo provider's pause between words (default: 20).") { $0.chatEchoDelay = .milliseconds($1) },
            seconds("chatConnectTimeoutSeconds", "--chat-connect-timeout", "Connecting to the endpoint (default: 5).") { $0.chatTimeouts.connect = $1 },
            seconds("chatFirstByteTimeoutSeconds", "--chat-first-byte-timeout", "Waiting for the first byte of a reply (default: 60).") { $0.chatTimeouts.firstByte = $1 },
            seconds("chatIdleTimeoutSeconds", "--chat-idle-timeout", "Silence between chunks of a reply (default: 60).") { $0.chatTimeouts.idle = $1 },
            seconds("chatTotalTimeoutSeconds", "--chat-total-timeout", "A whole reply (default: 600).") { $0.chatTimeouts.total = $1 },
            ConfigKey(
                name: "pluginDirectories", flag: "--plugin-dirs",
                help: "Where external plugins are found, in order (comma-separated; default: <data dir>/plugins, /usr/lib/appd/plugins)."
            ) { config, value throws(ConfigProblem) in
                switch value {
                case .null: config.pluginDirectories = nil
                case .array(let items):
                    let dirs = items.compactMap(\.stringValue)
                    guard dirs.count == items.count else { throw ConfigProblem("needs a list of directories") }
                    config.pluginDirectories = dirs
                case .string(let text): config.pluginDirectories = text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
                default: throw ConfigProblem("needs a list of directories")
                }
            },
            ConfigKey(
                name: "pluginSandbox", flag: "--plugin-sandbox",
                help: "How external plugins are confined: bubblewrap (default) or none (unconfined, as appd's user; warned at every start)."
            ) { config, value throws(ConfigProblem) in
                guard let text = value.stringValue, let mode = PluginSandbox.Mode(rawValue: text) else { throw ConfigProblem("is bubblewrap or none") }
                config.pluginSandbox.mode = mode
            },
            text(
                "pluginCredentialsDirectory", "--plugin-credentials-directory",
                "Each plugin's key files, in <this>/<plugin>/, shown to it read-only at $CREDENTIALS_DIRECTORY (default: /etc/appd/credentials)."
            ) {
                $0.pluginSandbox.credentialsDirectory = $1
            },
            text("pluginBubblewrap", "--plugin-bubblewrap", "bwrap's path (default: found on PATH, /usr/bin, /usr/local/bin).") { $0.pluginSandbox.bubblewrap = $1 },
            paths(
                "pluginHiddenPaths", "--plugin-hidden-paths",
                "Paths no plugin may read in the trees it sees (comma-separated; default: /etc/shadow, /etc/ssl/private, /etc/appd, /etc/ssh, ...)."
            ) { $0.pluginSandbox.hiddenPaths = $1 },
            paths(
                "pluginReadOnlyPaths", "--plugin-read-only-paths",
                "Host paths every plugin may read, besides /usr, /etc and its own folder (comma-separated; e.g. a shared runtime)."
            ) { $0.pluginSandbox.readOnlyPaths = $1 },
            ConfigKey(name: "pluginUIDRange", flag: "--plugin-uid-range", help: "With appd as root, the uids plugins run as, one each (default: 61184-65519).") {
                config, value throws(ConfigProblem) in
                let bounds = value.stringValue?.split(separator: "-").compactMap { UInt32($0.trimmingWhitespace()) } ?? []
                guard bounds.count == 2, bounds[0] > 0, bounds[0] <= bounds[1] else { throw ConfigProblem("needs a range of uids like 61184-65519 (not including 0)") }
                config.pluginSandbox.uidRange = bounds[0]...bounds[1]
            },
            seconds("pluginHealthIntervalSeconds", "--plugin-health-interval", "Seconds between external plugins' health checks (default: 10).") { $0.pluginHealthInterval = $1 },
            integer("ratingMinPositiveSignals", "--rating-min-positive-signals", "Rating: positive signals needed since the last prompt (default: 3).") {
                $0.rating.minPositiveSignals = $1
            },
            integer("ratingMinDaysSinceFirstSeen", "--rating-min-days-since-first-seen", "Rating: days since the user was first seen (default: 3).") {
                $0.rating.minDaysSinceFirstSeen = $1
            },
            integer("ratingMinSessions", "--rating-min-sessions", "Rating: sign-ins needed (default: 3).") { $0.rating.minSessions = $1 },
            integer("ratingNegativeCooldownHours", "--rating-negative-cooldown-hours", "Rating: hours after a negative signal with no prompt (default: 24).") {
                $0.rating.negativeCooldownHours = $1
            },
            integer("ratingMinDaysBetweenPrompts", "--rating-min-days-between-prompts", "Rating: days between prompts (default: 90).") { $0.rating.minDaysBetweenPrompts = $1 },
            integer("ratingMaxPromptsPerYear", "--rating-max-prompts-per-year", "Rating: prompts in any 365 days (default: 3).") { $0.rating.maxPromptsPerYear = $1 },
            text("chatCaFile", "--chat-ca-file", "Trusted CA certificates (PEM) for the endpoint instead of the system store.") { $0.chatCAFile = $1 },
        ] + identity + sync + files + operations
}

/// What is wrong with one value (the loader adds which key and where it came from).
struct ConfigProblem: Error, CustomStringConvertible {
    let reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Auth
import Console
import Bus
import Files
import Crypto
import Storage
import PluginKit
import HTTP
import Chat
import Contracts
import Payments
import Rating
import AppAPI
import ExternalPlugins

/// appd's effective configuration: built-in defaults < config file < `APPD_*` environment <
/// command-line flags. With nothing given, appd works as is.
struct AppdConfig: Sendable {
    var socket: String = SocketPath.defaultPath()
    var dataDirectory: String = DataDirectory.defaultPath()
    /// A PostgreSQL URL shared by several instances; nil is SQLite in the data directory.
    var database: String?
    var databaseReadConnections = 4
    var adminGroup: String?
    var logLevel: LogLevel = .info
    var limits = ServerLimits()
    /// Bounds on event streams: topics per subscription, streams per account, a user stream's
    /// session re-check and longest lifetime.
    var subscribe = SubscribeLimits()
    /// Calls each signed-in account may make a minute (0: no limit), and its burst.
    var accountCallsPerMinute = 1200
    var accountCallBurst = 300
    /// How often an instance settles the rate limits with the other instances on its database.
    var sharedLimitsInterval: Duration = .seconds(1)
    /// Connections a listening socket queues before appd accepts them; 0: the kernel's ceiling.
    var listenBacklog = 0
    /// Todos one account may hold.
    var todosPerUser = 10_000
    /// MiB of text (todos, chats, memories) one account may keep; 0: no limit.
    var accountStorageMB = 100
    /// MiB of event payloads one data export carries at most.
    var exportEventsMB = 8
    /// Hours a keyed write's outcome is kept for retries; days a deletion is kept for change feeds.
    var idempotencyKeyHours = 24
    /// Backups: where (nil: <data dir>/backups), how often (0: not scheduled), how many kept.
    var backupDirectory: String?
    var backupScheduleSeconds = 0
    var backupKeep = 7
    /// The operator console (off unless `listen` is set).
    var console = ConsoleOptions()
    var tombstoneDays = 90
    /// Event log retention: events older than this many days are pruned (null keeps them; a
    /// log kept forever grows with every write and every user's replay reads more of it).
    var eventRetentionDays: Int? = 90
    /// Event log retention: at most this many events are kept (nil keeps them all).
    var eventRetentionCount: Int?
    /// Lifetime of an access token, and of a refresh token.
    var accessTokenSeconds = 3600
    var refreshTokenDays = 30
    /// Resolved sessions kept in memory (0 turns the cache off; needed when another process
    /// can revoke sessions in the same database).
    var sessionCacheEntries = 10_000
    /// Sign-in with Apple and Google.
    var identity = IdentityOptions()
    /// Refuse sign-in until the account's email is verified.
    var requireVerifiedEmail = false
    /// The link password-reset mails carry, with `{token}` for the reset token.
    var authResetLinkTemplate: String?
    /// Guest accounts (SignInAnonymously), and how long an idle one lives.
    var guestAccounts = false
    var guestIdleDays = 30
    /// Apple's server side (code exchange and token revocation): all of team id, key id and
    /// private key turn it on; the sealing key is needed with it.
    var appleTeamID: String?
    var appleKeyID: String?
    var applePrivateKeyFile: String?
    /// The App Store Server API's `.p8` (read at start; must not be readable by others).
    var appStorePrivateKeyFile: String?
    /// Google Play's service account key, JSON (read at start; must not be readable by others).
    var googlePlayServiceAccountFile: String?
    var applePrivateKey: String?
    var appleClientID: String?
    var appleTokenURL = "https://appleid.apple.com/auth/token"
    var appleRevokeURL = "https://appleid.apple.com/auth/revoke"
    var tokenEncryptionKeyFile: String?
    var tokenEncryptionKey: String?
    /// Plugins not to start (their gates are then missing: commands needing them are denied).
    var disabledPlugins: [String] = []
    /// Products, meters, provider secrets and keys, webhook limits.
    var payments = PaymentsPlugin.Options()
    /// The app-facing HTTP API's address (off when nil) and its limits.
    var httpListen: String?
    var http = HTTPAPIOptions()
    /// Chat: the plugin's options, and the provider's settings.
    var chat = ChatPlugin.Options()
    var chatProvider = "echo"
    var chatBaseURL = "https://api.openai.com/v1"
    var chatModel = "gpt-4o-mini"
    var chatModels: [ChatModel] = []
    var chatAPIKey: String?
    var chatEchoDelay: Duration = .milliseconds(20)
    var chatTimeouts = HTTPTimeouts()
    var chatCAFile: String?
    /// Where external plugins are found (nil: `<data dir>/plugins`, then `/usr/lib/appd/plugins`).
    var pluginDirectories: [String]?
    /// How often external plugins are health-checked.
    var pluginHealthInterval: Duration = .seconds(10)
    /// How external plugins are confined (bubblewrap, hidden paths, shared read-only paths, uids).
    var pluginSandbox = PluginSandbox()
    /// When rating asks for a rating.
    var rating = RatingRules()
    /// Stored files (`files*` keys).
    var files = FilesSettings()

    /// The identity options with Apple's server side resolved: the private key and the sealing
    /// key read from their files (which must not be readable by others) or the environment.
    func resolvedIdentity() throws -> IdentityOptions {
        var options = identity
        let anyApple = appleTeamID != nil || appleKeyID != nil || applePrivateKeyFile != nil || applePrivateKey != nil
        guard anyApple else { return options }
        guard let team = appleTeamID, let keyID = appleKeyID else {
            throw ConfigProblem("Apple's token endpoint needs appleTeamId, appleKeyId and applePrivateKeyFile (or applePrivateKey) together")
        }
        let pem: String
        if let applePrivateKey {
            pem = applePrivateKey
        } else if let applePrivateKeyFile {
            pem = try Self.readSecretFile(applePrivateKeyFile, what: "applePrivateKeyFile")
        } else {
            throw ConfigProblem("Apple's token endpoint needs applePrivateKeyFile (the AuthKey_<key id>.p8) or applePrivateKey")
        }
        guard let clientID = appleClientID ?? identity.apple.audiences.first else {
            throw ConfigProblem("Apple's token endpoint needs appleAudiences (or appleClientId)")
        }
        var server = AppleServerSettings(teamID: team, keyID: keyID, privateKeyPEM: pem, clientID: clientID)
        server.tokenURL = appleTokenURL
        server.revokeURL = appleRevokeURL
        options.appleServer = server
        let keyText: String
        if let tokenEncryptionKey {
            keyText = tokenEncryptionKey
        } else if let tokenEncryptionKeyFile {
            keyText = try Self.readSecretFile(tokenEncryptionKeyFile, what: "tokenEncryptionKeyFile")
        } else {
            throw ConfigProblem("Apple's refresh tokens are kept encrypted: set tokenEncryptionKeyFile (32 random bytes, base64: 'openssl rand -base64 32')")
        }
        guard let key = Base64.decode(keyText.trimmingWhitespace()), key.count == 32 else {
            throw ConfigProblem("tokenEncryptionKey needs 32 bytes in base64 ('openssl rand -base64 32')")
        }
        options.tokenEncryptionKey = key
        return options
    }

    /// A key file's text; refused when others may read it.
    /// The payments options with the App Store Server API's key read from its file.
    func resolvedPayments() throws -> PaymentsPlugin.Options {
        var options = payments
        if let appStorePrivateKeyFile {
            options.appStorePrivateKey = try Self.readSecretFile(appStorePrivateKeyFile, what: "appStorePrivateKeyFile")
        }
        if let googlePlayServiceAccountFile {
            options.googlePlayServiceAccount = try Self.readSecretFile(googlePlayServiceAccountFile, what: "googlePlayServiceAccountFile")
        }
        return options
    }

    static func readSecretFile(_ path: String, what: String) throws -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw ConfigProblem("\(what): cannot read \(path)") }
        guard info.st_mode & 0o077 == 0 else { throw ConfigProblem("\(what): \(path) is readable by others; chmod 600 it") }
        guard let text = ConfigLoader.readFile(path) else { throw ConfigProblem("\(what): cannot read \(path)") }
        return text
    }

    /// The chat plugin's options with the chosen provider.
    var chatOptions: ChatPlugin.Options {
        var options = chat
        if chatProvider == "openai" {
            var settings = OpenAIProvider.Options(baseURL: chatBaseURL, model: chatModel, apiKey: chatAPIKey)
            settings.timeouts = chatTimeouts
            settings.caFile = chatCAFile
            options.provider = .openAI(settings)
        } else {
            options.provider = .echo(delay: chatEchoDelay)
        }
        options.tombstoneRetention = .seconds(Int64(tombstoneDays) * 86_400)
        options.models = ChatModels(chatModels, default: chatModel)
        options.storageLimit = Int64(accountStorageMB) << 20
        return options
    }

    /// Where external plugins are looked for: the configured folders, else `<data dir>/plugins`
    /// and `/usr/lib/appd/plugins`.
    var resolvedPluginDirectories: [String] { pluginDirectories ?? [dataDirectory + "/plugins", "/usr/lib/appd/plugins"] }

    /// The effective values as JSON, for `--print-config` (secrets would be redacted here).
    var json: JSONValue {
        func seconds(_ d: Duration) -> JSONValue {
            .double(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
        }
        return [
            "socket": .string(socket),
            "dataDirectory": .string(dataDirectory),
            // The URL without its password.
            "database": .string(database.map(PostgresURL.redacted) ?? "sqlite"),
            "databaseReadConnections": .int(Int64(databaseReadConnections)),
            "adminGroup": adminGroup.map(JSONValue.string) ?? .null,
            "logLevel": .string(logLevel.description),
            "maxMessageBytes": .int(Int64(limits.maxMessageBytes)),
            "maxConnections": .int(Int64(limits.maxConnections)),
            "maxConnectionsPerUID": .int(Int64(limits.maxConnectionsPerUID)),
            "maxConnectionsPerPlugin": .int(Int64(limits.maxConnectionsPerPlugin)),
            "maxQueuedCalls": .int(Int64(limits.maxQueuedCalls)),
            "maxPendingOutputBytes": .int(Int64(limits.maxPendingOutputBytes)),
            "firstMessageTimeoutSeconds": seconds(limits.firstMessageTimeout),
            "callTimeoutSeconds": seconds(limits.callTimeout),
            "drainTimeoutSeconds": seconds(limits.drainTimeout),
            "stalledStreamTimeoutSeconds": seconds(limits.stalledStreamTimeout),
            "idleWorkerSeconds": seconds(limits.idleWorkerRetirement),
            "eventRetentionDays": eventRetentionDays.map { .int(Int64($0)) } ?? .null,
            "eventRetentionCount": eventRetentionCount.map { .int(Int64($0)) } ?? .null,
            "disabledPlugins": .array(disabledPlugins.map(JSONValue.string)),
            "accessTokenSeconds": .int(Int64(accessTokenSeconds)),
            "refreshTokenDays": .int(Int64(refreshTokenDays)),
            "sessionCacheEntries": .int(Int64(sessionCacheEntries)),
            "requireVerifiedEmail": .bool(requireVerifiedEmail),
            "authResetLinkTemplate": authResetLinkTemplate.map(JSONValue.string) ?? .null,
            "guestAccounts": .bool(guestAccounts),
            "guestIdleDays": .int(Int64(guestIdleDays)),
            "appleAudiences": .array(identity.apple.audiences.map(JSONValue.string)),
            "appleKeysUrl": .string(identity.apple.keysURL),
            "appleCheckNonce": .bool(identity.apple.checkNonce),
            "googleAudiences": .array(identity.google.audiences.map(JSONValue.string)),
            "googleKeysUrl": .string(identity.google.keysURL),
            "googleCheckNonce": .bool(identity.google.checkNonce),
            "googleHostedDomains": .array(identity.google.hostedDomains.map(JSONValue.string)),
            "identityCaFile": identity.caFile.map(JSONValue.string) ?? .null,
            "idTokenLeewaySeconds": seconds(identity.leeway),
            "appleTeamId": appleTeamID.map(JSONValue.string) ?? .null,
            "appleKeyId": appleKeyID.map(JSONValue.string) ?? .null,
            "applePrivateKeyFile": applePrivateKeyFile.map(JSONValue.string) ?? .null,
            "applePrivateKey": applePrivateKey == nil ? .null : .string("<redacted>"),
            "appleClientId": appleClientID.map(JSONValue.string) ?? .null,
            "appleTokenUrl": .string(appleTokenURL),
            "appleRevokeUrl": .string(appleRevokeURL),
            "tokenEncryptionKeyFile": tokenEncryptionKeyFile.map(JSONValue.string) ?? .null,
            "tokenEncryptionKey": tokenEncryptionKey == nil ? .null : .string("<redacted>"),
            "reauthenticationSeconds": seconds(identity.reauthenticationWindow),
            "paymentsProducts": .string(payments.catalog.products.map { "\($0.id)=\($0.entitlement)/\($0.period.rawValue)" }.joined(separator: ",")),
            "paymentsMeters": .string(payments.catalog.meters.map { "\($0.name)=\($0.limit)/\($0.period.rawValue)/\($0.entitlement)" }.joined(separator: ",")),
            // Secrets: only whether they are set.
            "revenuecatWebhookSecret": payments.revenueCatSecret == nil ? .null : .string("<redacted>"),
            "revenuecatApiKey": payments.revenueCatAPIKey == nil ? .null : .string("<redacted>"),
            "revenuecatApiUrl": .string(payments.revenueCatAPIURL),
            "revenuecatCaFile": payments.revenueCatCAFile.map(JSONValue.string) ?? .null,
            "stripeWebhookSecrets": .array(payments.stripeSecrets.map { _ in .string("<redacted>") }),
            "appStoreRootCertificates": payments.appStoreRootCertificates.map(JSONValue.string) ?? .null,
            "appStoreBundleId": payments.appStoreBundleID.map(JSONValue.string) ?? .null,
            "appStoreEnvironments": .array(payments.appStoreEnvironments.sorted().map(JSONValue.string)),
            "appStoreIssuerId": payments.appStoreIssuerID.map(JSONValue.string) ?? .null,
            "appStoreKeyId": payments.appStoreKeyID.map(JSONValue.string) ?? .null,
            "appStorePrivateKeyFile": appStorePrivateKeyFile.map(JSONValue.string) ?? .null,
            "appStoreApiUrl": payments.appStoreAPIURL.map(JSONValue.string) ?? .null,
            "appStoreCaFile": payments.appStoreCAFile.map(JSONValue.string) ?? .null,
            "googlePlayPackageName": payments.googlePlayPackageName.map(JSONValue.string) ?? .null,
            "googlePlayServiceAccountFile": googlePlayServiceAccountFile.map(JSONValue.string) ?? .null,
            "googlePlayPushAudience": payments.googlePlayPushAudience.map(JSONValue.string) ?? .null,
            "googlePlayPushServiceAccount": payments.googlePlayPushServiceAccount.map(JSONValue.string) ?? .null,
            "googlePlayApiUrl": payments.googlePlayAPIURL.map(JSONValue.string) ?? .null,
            "googlePlayKeysUrl": payments.googlePlayKeysURL.map(JSONValue.string) ?? .null,
            "googlePlayCaFile": payments.googlePlayCAFile.map(JSONValue.string) ?? .null,
            "httpListen": httpListen.map(JSONValue.string) ?? .null,
            "httpAllowedOrigins": .array(http.allowedOrigins.sorted().map(JSONValue.string)),
            "httpTrustedProxies": .array(http.trustedProxies.sorted().map(JSONValue.string)),
            "httpRateLimitPerMinute": .int(Int64(http.rateLimitPerMinute)),
            "httpMaxBodyBytes": .int(Int64(http.limits.maxBodyBytes)),
            "httpMaxHeaderBytes": .int(Int64(http.limits.maxHeadBytes)),
            "httpMaxConnections": .int(Int64(http.limits.maxConnections)),
            "httpMaxStreams": .int(Int64(http.limits.maxStreams)),
            "httpMaxStreamsPerClient": .int(Int64(http.maxStreamsPerClient)),
            "accountCallsPerMinute": .int(Int64(accountCallsPerMinute)),
            "accountCallBurst": .int(Int64(accountCallBurst)),
            "sharedLimitsSeconds": seconds(sharedLimitsInterval),
            "listenBacklog": .int(Int64(listenBacklog)),
            "todosPerUser": .int(Int64(todosPerUser)),
            "accountStorageMB": .int(Int64(accountStorageMB)),
            "exportEventsMB": .int(Int64(exportEventsMB)),
            "idempotencyKeyHours": .int(Int64(idempotencyKeyHours)),
            "backupDirectory": .string(resolvedBackupDirectory),
            "backupScheduleSeconds": .int(Int64(backupScheduleSeconds)),
            "backupKeep": .int(Int64(backupKeep)),
            "consoleListen": console.listen.map(JSONValue.string) ?? .null,
            "consoleUrl": console.publicURL.map(JSONValue.string) ?? .null,
            "consoleLinkSeconds": .int(Int64(console.linkLifetime.inSeconds)),
            "consoleSessionMinutes": .int(Int64(console.sessionIdle.inSeconds / 60)),
            "tombstoneDays": .int(Int64(tombstoneDays)),
            "chatConversationsPerUser": .int(Int64(chat.maxConversationsPerUser)),
            "subscribeMaxTopics": .int(Int64(subscribe.maxTopics)),
            "streamsPerAccount": .int(Int64(subscribe.maxStreamsPerAccount)),
            "streamSessionRecheckSeconds": seconds(subscribe.sessionRecheck),
            "streamMaxLifetimeSeconds": seconds(subscribe.maxUserStreamLifetime),
            "httpKeepAliveSeconds": seconds(http.limits.keepAliveTimeout),
            "httpRequestTimeoutSeconds": seconds(http.limits.requestTimeout),
            "httpCallTimeoutSeconds": seconds(http.callTimeout),
            "maxWebhookBytes": .int(Int64(payments.maxWebhookBytes)),
            "chatProvider": .string(chatProvider),
            "chatBaseURL": .string(chatBaseURL),
            "chatModel": .string(chatModel),
            "chatModels": .array(chatModels.map { model in .string(model.entitlement.map { "\(model.name)=\($0)" } ?? model.name) }),
            "chatMemoryCharacters": .int(Int64(chat.memoryCharacters)),
            "chatApiKey": chatAPIKey == nil ? .null : .string("<redacted>"),
            "chatSystemPrompt": chat.systemPrompt.map(JSONValue.string) ?? .null,
            "chatContextCharacters": .int(Int64(chat.contextCharacters)),
            "chatMeter": chat.meter.map(JSONValue.string) ?? .null,
            "chatImageBaseURL": chat.imageBaseURL.map(JSONValue.string) ?? .null,
            "chatEchoDelayMilliseconds": .int(chatEchoDelay.components.seconds * 1000 + chatEchoDelay.components.attoseconds / 1_000_000_000_000_000),
            "chatConnectTimeoutSeconds": seconds(chatTimeouts.connect),
            "chatFirstByteTimeoutSeconds": seconds(chatTimeouts.firstByte),
            "chatIdleTimeoutSeconds": seconds(chatTimeouts.idle),
            "chatTotalTimeoutSeconds": seconds(chatTimeouts.total),
            "chatCaFile": chatCAFile.map(JSONValue.string) ?? .null,
            "pluginDirectories": .array(resolvedPluginDirectories.map(JSONValue.string)),
            "pluginHealthIntervalSeconds": seconds(pluginHealthInterval),
            "pluginSandbox": .string(pluginSandbox.mode.rawValue),
            "pluginBubblewrap": pluginSandbox.bubblewrap.map(JSONValue.string) ?? .null,
            "pluginCredentialsDirectory": pluginSandbox.credentialsDirectory.map(JSONValue.string) ?? .null,
            "pluginHiddenPaths": .array(pluginSandbox.hiddenPaths.map(JSONValue.string)),
            "pluginReadOnlyPaths": .array(pluginSandbox.readOnlyPaths.map(JSONValue.string)),
            "pluginUIDRange": .string("\(pluginSandbox.uidRange.lowerBound)-\(pluginSandbox.uidRange.upperBound)"),
            "ratingMinPositiveSignals": .int(Int64(rating.minPositiveSignals)),
            "ratingMinDaysSinceFirstSeen": .int(Int64(rating.minDaysSinceFirstSeen)),
            "ratingMinSessions": .int(Int64(rating.minSessions)),
            "ratingNegativeCooldownHours": .int(Int64(rating.negativeCooldownHours)),
            "ratingMinDaysBetweenPrompts": .int(Int64(rating.minDaysBetweenPrompts)),
            "ratingMaxPromptsPerYear": .int(Int64(rating.maxPromptsPerYear)),
            "filesDirectory": .string(files.directory ?? dataDirectory + "/plugin-data/files"),
            "filesMaxMB": .int(Int64(files.maxMB)),
            "filesQuotaMB": .int(Int64(files.quotaMB)),
            "filesUploadsInFlight": .int(Int64(files.uploadsInFlight)),
            "filesPendingUploads": .int(Int64(files.pendingUploads)),
            "filesUploadHours": .int(Int64(files.uploadHours)),
            "filesAllowedTypes": .array(files.allowedTypes.map(JSONValue.string)),
            "filesMaxMegapixels": .int(Int64(files.maxMegapixels)),
            "filesKeepMetadata": .bool(files.keepMetadata),
            "filesThumbnailSizes": .array(files.thumbnailSizes.map { .int(Int64($0)) }),
            "filesThumbnailMaxMegapixels": .int(Int64(files.thumbnailMaxMegapixels)),
            "filesUrlKeyFile": files.urlKeyFile.map(JSONValue.string) ?? .null,
            "filesS3Endpoint": files.s3Endpoint.map(JSONValue.string) ?? .null,
            "filesS3Bucket": files.s3Bucket.map(JSONValue.string) ?? .null,
            "filesS3Region": .string(files.s3Region),
            "filesS3AccessKeyId": files.s3AccessKeyID.map(JSONValue.string) ?? .null,
            "filesS3SecretKeyFile": files.s3SecretKeyFile.map(JSONValue.string) ?? .null,
            "filesS3PathStyle": .bool(files.s3PathStyle),
            "filesS3Prefix": .string(files.s3Prefix),
            "filesS3PartMB": .int(Int64(files.s3PartMB)),
            "filesS3CaFile": files.s3CAFile.map(JSONValue.string) ?? .null,
        ]
    }
}

extension AppdConfig {
    /// Where backups go: `backupDirectory`, or `<data dir>/backups`.
    var resolvedBackupDirectory: String { backupDirectory ?? dataDirectory + "/backups" }
}

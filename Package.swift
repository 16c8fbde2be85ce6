// swift-tools-version:6.0
import PackageDescription

/// Every Swift target builds in Swift 6 mode with strict concurrency and `any` spelled out.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "appd",
    // Linux is where appd runs; the client library and what it imports (AppdClient, Contracts,
    // BusCore) also build for the apps' platforms, as old as the app templates target: nothing
    // there is newer (no Synchronization; .ci/check-client-portability holds it to that).
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .executable(name: "appd", targets: ["appd"]),
        .executable(name: "appctl", targets: ["appctl"]),
        .executable(name: "appd-plugin-greeter", targets: ["appd-plugin-greeter"]),
        .library(name: "Bus", targets: ["Bus"]),
        .library(name: "BusCore", targets: ["BusCore"]),
        .library(name: "PluginSDK", targets: ["PluginSDK"]),
        // The Swift client apps use (iOS, macOS, Linux): every built-in method as a typed call.
        .library(name: "AppdClient", targets: ["AppdClient"]),
        // In-memory fakes of AppdClient's services (`InMemoryTodos`, `InMemoryAuth`,
        // `InMemoryChat`), for an app's view-model tests.
        .library(name: "AppdClientTesting", targets: ["AppdClientTesting"]),
    ],
    targets: [
        // MARK: Sources/Bus — the platform

        // The portable core every other target (and every client) builds on: messages and the
        // envelope, wire errors, JSON, the varlink IDL, event types and topic filters,
        // idempotency keys, logging. No socket, no thread, nothing Linux-only.
        .target(name: "BusCore", path: "Sources/Bus/BusCore", swiftSettings: strict),
        // The varlink wire as a client sees it: framing, calls and replies, the blocking client.
        .target(name: "Varlink", dependencies: ["BusCore", "CSystem"], path: "Sources/Bus/Varlink", swiftSettings: strict),
        // What a server runs on: the epoll event loop, blocking pools, deadlines, services and
        // their lifecycle (signals, systemd), metrics.
        .target(name: "Runtime", dependencies: ["BusCore", "CSystem"], path: "Sources/Bus/Runtime", swiftSettings: strict),
        // What serves varlink calls to typed handlers, in appd and in an external plugin's
        // process: the command bus (handlers, the gate chain, reply streams) and the varlink
        // server (socket, connections, the dispatcher).
        .target(name: "Serving", dependencies: ["BusCore", "Varlink", "Runtime", "CSystem"], path: "Sources/Bus/Serving", swiftSettings: strict),
        // The typed async event bus: a command bus that also fans out events (subscriptions,
        // topics, signed-in streams), appd's own gates, and io.appd.Bus on the socket.
        .target(name: "Bus", dependencies: ["BusCore", "Varlink", "Runtime", "Serving", "CSystem"], path: "Sources/Bus/Bus", swiftSettings: strict),
        // The SQL database behind every repository: SQLite (embedded) or PostgreSQL (several
        // instances), migrations, group commit, the durable event log and its outbox, keys.
        .target(name: "Storage", dependencies: ["BusCore", "Runtime", "CSQLite", "CPostgres"], path: "Sources/Bus/Storage", swiftSettings: strict),
        // Committed events delivered: the outbox relay onto the bus, durable consumers, retention.
        .target(name: "EventDelivery", dependencies: ["BusCore", "Runtime", "Bus", "Storage"], path: "Sources/Bus/EventDelivery", swiftSettings: strict),
        // HTTP/1.1: the client (LLM and identity providers), the server on an event loop, SSE.
        .target(name: "HTTP", dependencies: ["BusCore", "Runtime", "CSystem", "CNet"], path: "Sources/Bus/HTTP", swiftSettings: strict),
        // OpenSSL libcrypto: scrypt, SHA-256, HMAC, AES-GCM, ECDSA/RSA, JOSE, the CSPRNG.
        .target(name: "Crypto", dependencies: ["BusCore", "Runtime", "COpenSSL"], path: "Sources/Bus/Crypto", swiftSettings: strict),
        // System C libraries and calls kept out of Swift headers: socket calls that need
        // _GNU_SOURCE (SO_PEERCRED, accept4), SQLite, libpq, libcrypto, outbound TCP/TLS.
        .target(name: "CSystem", path: "Sources/Bus/Shims/CSystem"),
        .systemLibrary(name: "CSQLite", path: "Sources/Bus/Shims/CSQLite", pkgConfig: "sqlite3"),
        // libpq is loaded when PostgreSQL is first used (dlopen), not linked: see CPostgres.h.
        .target(name: "CPostgres", path: "Sources/Bus/Shims/CPostgres", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "COpenSSL", path: "Sources/Bus/Shims/COpenSSL", pkgConfig: "libcrypto"),
        // Thumbnails with the system's libjpeg (turbo) and libpng.
        .target(name: "CImage", path: "Sources/Bus/Shims/CImage", linkerSettings: [.linkedLibrary("jpeg"), .linkedLibrary("png16")]),
        .target(name: "CNet", path: "Sources/Bus/Shims/CNet", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        // MARK: Sources/Plugins — the features

        // The event types each plugin publishes, apart from the plugins, so consumers import
        // the events they react to without importing the publisher.
        .target(name: "Contracts", dependencies: ["BusCore"], path: "Sources/Plugins/Contracts", exclude: ["README.md"], swiftSettings: strict),
        // The Swift client for apps, over URLSession and the HTTP API: typed calls from the
        // contracts, streams over server-sent events, typed errors, a session manager. It and
        // everything it imports build for iOS and macOS (.ci/check-client-portability).
        .target(name: "AppdClient", dependencies: ["Contracts", "BusCore"], path: "Sources/Plugins/AppdClient", swiftSettings: strict),
        .target(name: "AppdClientTesting", dependencies: ["AppdClient", "Contracts", "BusCore"], path: "Sources/Plugins/AppdClientTesting", swiftSettings: strict),
        // What every plugin implements, the host that registers, starts, supervises and stops
        // them, and what plugins share (the idempotency gate, the change feed).
        .target(name: "PluginKit", dependencies: ["Bus", "Contracts", "Storage", "EventDelivery", "HTTP", "Crypto"], path: "Sources/Plugins/PluginKit", swiftSettings: strict),
        // Accounts and sessions (io.appd.Auth), the session and onboarding gates.
        .target(name: "Auth", dependencies: ["Bus", "Contracts", "HTTP", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Auth", swiftSettings: strict),
        // Owner-scoped todos (io.appd.Todos).
        .target(name: "Todos", dependencies: ["Bus", "Contracts", "Storage", "EventDelivery", "Crypto", "PluginKit"], path: "Sources/Plugins/Todos", swiftSettings: strict),
        // Products, entitlements from provider webhooks, the paywall gate (io.appd.Payments).
        .target(
            name: "Payments", dependencies: ["Bus", "Contracts", "CSystem", "HTTP", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Payments",
            swiftSettings: strict),
        // Conversations and streamed LLM replies (io.appd.Chat), the provider seam.
        .target(
            name: "Chat", dependencies: ["Bus", "Contracts", "HTTP", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Chat",
            swiftSettings: strict),
        // Rating prompts from bus signals (io.appd.Rating).
        .target(name: "Rating", dependencies: ["Bus", "Contracts", "Storage", "EventDelivery", "PluginKit"], path: "Sources/Plugins/Rating", swiftSettings: strict),
        // Files the signed-in user stores, their bytes over HTTP (io.appd.Files).
        .target(name: "Files", dependencies: ["Bus", "Contracts", "Storage", "EventDelivery", "HTTP", "Crypto", "Runtime", "PluginKit", "CImage"], path: "Sources/Plugins/Files", swiftSettings: strict),
        // Per-user settings the plugins declare, versioned (io.appd.Settings).
        .target(name: "Settings", dependencies: ["Bus", "Contracts", "Storage", "EventDelivery", "PluginKit"], path: "Sources/Plugins/Settings", swiftSettings: strict),
        // The SDK of an external plugin written in Swift: one call serves its interfaces with
        // typed handlers on the socket appd passes; a connection back to appd as the plugin.
        .target(name: "PluginSDK", dependencies: ["Serving"], path: "Sources/Plugins/PluginSDK", swiftSettings: strict),
        // An example external plugin in Swift (contrib/plugins/greeter), also used by the tests.
        .executableTarget(name: "appd-plugin-greeter", dependencies: ["PluginSDK"], path: "Sources/Plugins/Examples/Greeter", swiftSettings: strict),

        // MARK: Sources/appd — the daemon

        // External plugins: supervised processes, each confined in its sandbox, on a socket of its own.
        .target(name: "ExternalPlugins", dependencies: ["Bus", "Contracts", "CSystem", "PluginKit"], path: "Sources/appd/ExternalPlugins", swiftSettings: strict),
        // Online backups of a SQLite appd, their verification, scheduling and restore.
        .target(name: "Backups", dependencies: ["BusCore", "Runtime", "Storage", "Crypto"], path: "Sources/appd/Backups", swiftSettings: strict),
        // The HTTP API apps use: routes from the served IDLs, OpenAPI, SSE, conditional requests.
        .target(name: "AppAPI", dependencies: ["Bus", "HTTP"], path: "Sources/appd/AppAPI", swiftSettings: strict),
        // The operator console in the browser: one-time sign-in links, sessions, its embedded page.
        .target(name: "Console", dependencies: ["Bus", "HTTP", "Crypto", "Contracts", "AppAPI", "Storage", "CSystem"], path: "Sources/appd/Console", swiftSettings: strict),
        // The composition root: configuration, start-up in named steps, io.appd.Daemon.
        .executableTarget(
            name: "appd",
            dependencies: [
                "Bus", "Contracts", "Storage", "EventDelivery", "PluginKit", "ExternalPlugins", "AppAPI", "Backups", "Console", "HTTP", "Auth", "Todos", "Payments", "Chat", "Rating", "Settings", "Files", "CSystem",
            ],
            path: "Sources/appd/Main", swiftSettings: strict),

        // MARK: Sources/appctl — the CLI (a client: the core, the varlink client, the contracts)

        // appctl's commands and parsers (a library, so the fuzzers can reach the parsers), and the
        // thin executable.
        .target(name: "AppctlKit", dependencies: ["BusCore", "Varlink", "Contracts"], path: "Sources/appctl/AppctlKit", swiftSettings: strict),
        .executableTarget(
            name: "appctl", dependencies: ["AppctlKit"], path: "Sources/appctl/Main", swiftSettings: strict,
            // A CLI is started once per command: link the Swift runtime statically (≈1 ms faster start).
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]),

        // MARK: Tests, fuzzers, benchmarks

        // The fuzzers (Tests/Fuzz/run builds them with -sanitize=fuzzer): targets, driver shim, executable.
        .target(
            name: "FuzzTargets", dependencies: ["Bus", "Contracts", "AppctlKit", "Chat", "Crypto", "HTTP", "AppAPI", "Payments"], path: "Tests/Fuzz/Targets",
            swiftSettings: strict),
        .target(name: "CFuzz", path: "Tests/Fuzz/CFuzz"),
        .executableTarget(name: "appd-fuzz", dependencies: ["FuzzTargets", "CFuzz"], path: "Tests/Fuzz/Main", swiftSettings: strict),
        // Release-mode benchmarks of the bus and storage: `swift run -c release appd-bench`.
        .executableTarget(name: "appd-bench", dependencies: ["Bus", "Storage"], path: "Tests/Benchmarks", swiftSettings: strict),
        // The varlink certification both ways against the reference implementation (CI runs it).
        .executableTarget(name: "varlink-certification", dependencies: ["Bus"], path: "Tests/Certification", swiftSettings: strict),
        // What the plugin test targets share: one harness, a test clock, waiting on conditions.
        .target(name: "TestSupport", dependencies: ["Bus", "Contracts", "Storage", "EventDelivery", "PluginKit", "Crypto", "Auth"], path: "Tests/Support", swiftSettings: strict),
        .testTarget(name: "BusTests", dependencies: ["TestSupport", "Bus", "Serving", "BusCore", "Runtime", "Varlink", "CSystem"], path: "Tests/BusTests", swiftSettings: strict),
        .testTarget(
            name: "PluginKitTests", dependencies: ["TestSupport", "Contracts", "PluginKit", "PluginSDK", "Storage", "EventDelivery", "Bus"], path: "Tests/PluginKitTests",
            swiftSettings: strict),
        .testTarget(
            name: "ExternalPluginsTests", dependencies: ["TestSupport", "Contracts", "ExternalPlugins", "PluginKit", "Bus"], path: "Tests/ExternalPluginsTests",
            swiftSettings: strict),
        .testTarget(name: "AuthTests", dependencies: ["TestSupport", "Contracts", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/AuthTests", swiftSettings: strict),
        .testTarget(name: "FilesTests", dependencies: ["TestSupport", "Contracts", "Files", "Todos", "Auth", "Bus", "Storage", "PluginKit", "HTTP"], path: "Tests/FilesTests", swiftSettings: strict),
        .testTarget(name: "TodosTests", dependencies: ["TestSupport", "Contracts", "Todos", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/TodosTests", swiftSettings: strict),
        .testTarget(
            name: "PaymentsTests", dependencies: ["TestSupport", "Contracts", "Payments", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/PaymentsTests",
            swiftSettings: strict),
        .testTarget(
            name: "ChatTests", dependencies: ["TestSupport", "Contracts", "Chat", "Files", "Settings", "HTTP", "Payments", "Auth", "Bus", "CSystem", "Storage", "PluginKit", "Crypto"], path: "Tests/ChatTests",
            swiftSettings: strict),
        .testTarget(
            name: "RatingTests", dependencies: ["TestSupport", "Contracts", "Rating", "Todos", "Chat", "Payments", "Auth", "Bus", "Storage", "PluginKit", "Crypto"],
            path: "Tests/RatingTests", swiftSettings: strict),
        .testTarget(
            name: "SettingsTests", dependencies: ["TestSupport", "Contracts", "Settings", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/SettingsTests",
            swiftSettings: strict),
        // Each contract's Swift types against its IDL text, and the rendering of its errors.
        .testTarget(
            name: "ConsoleTests", dependencies: ["TestSupport", "Console", "Contracts", "HTTP", "Bus", "Storage"], path: "Tests/ConsoleTests", swiftSettings: strict),
        .testTarget(name: "ContractsTests", dependencies: ["Contracts", "BusCore"], path: "Tests/ContractsTests", swiftSettings: strict),
        // The client's parts that need no server: the event-stream parser, retries, error decoding.
        .testTarget(name: "AppdClientTests", dependencies: ["AppdClient", "AppdClientTesting", "Contracts", "BusCore"], path: "Tests/AppdClientTests", swiftSettings: strict),
        // appctl's command tree: the help of every command against a golden file, the declared parsing.
        .testTarget(name: "AppctlKitTests", dependencies: ["AppctlKit"], path: "Tests/AppctlKitTests", exclude: ["help.golden"], swiftSettings: strict),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets"], path: "Tests/FuzzTests", swiftSettings: strict),
        .testTarget(name: "HTTPTests", dependencies: ["TestSupport", "Contracts", "HTTP", "AppAPI", "Bus", "CSystem"], path: "Tests/HTTPTests", swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "BusCore", "TestSupport"], path: "Tests/CryptoTests", swiftSettings: strict),
        .testTarget(name: "StorageTests", dependencies: ["TestSupport", "Contracts", "Storage", "EventDelivery", "Bus"], path: "Tests/StorageTests", swiftSettings: strict),
        // Runs the real appd and appctl binaries (built beside the tests by `swift test`).
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "AppdClient", "Contracts"], path: "Tests/EndToEndTests", exclude: [], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)

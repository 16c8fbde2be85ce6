// swift-tools-version:6.0
import PackageDescription

/// Every Swift target builds in Swift 6 mode with strict concurrency and `any` spelled out.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "appd",
    products: [
        .executable(name: "appd", targets: ["appd"]),
        .executable(name: "appctl", targets: ["appctl"]),
        .executable(name: "appd-plugin-greeter", targets: ["appd-plugin-greeter"]),
        .library(name: "Bus", targets: ["Bus"]),
    ],
    targets: [
        // The typed async event bus, gates, logging, lifecycle and (later) the varlink wire.
        .target(name: "Bus", dependencies: ["CSystem"], path: "Sources/Bus/Bus", swiftSettings: strict),
        // Socket calls that need _GNU_SOURCE (SO_PEERCRED, accept4), kept out of Swift headers.
        .target(name: "CSystem", path: "Sources/Bus/Shims/CSystem"),
        // The fuzzers (Tests/Fuzz/run builds them with -sanitize=fuzzer): targets, driver shim, executable.
        .target(
            name: "FuzzTargets", dependencies: ["Bus", "AppctlKit", "Chat", "Crypto", "HTTP", "Payments"], path: "Tests/Fuzz/Targets",
            swiftSettings: strict),
        .target(name: "CFuzz", path: "Tests/Fuzz/CFuzz"),
        .executableTarget(name: "appd-fuzz", dependencies: ["FuzzTargets", "CFuzz"], path: "Tests/Fuzz/Main", swiftSettings: strict),
        // Release-mode benchmarks of the bus and storage: `swift run -c release appd-bench`.
        .executableTarget(
            name: "appd-bench", dependencies: ["Bus", "Storage"], path: "Tests/Benchmarks",
            swiftSettings: strict),

        // SQLite from the system (libsqlite3-dev), and the storage every plugin uses through
        // its repository: the Database protocol, migrations, group commit, the durable event log,
        // on SQLite (embedded) or PostgreSQL (several instances).
        .systemLibrary(name: "CSQLite", path: "Sources/Plugins/Shims/CSQLite", pkgConfig: "sqlite3"),
        // PostgreSQL's client library from the system (libpq-dev), for several instances on one database.
        .systemLibrary(name: "CPostgres", path: "Sources/Plugins/Shims/CPostgres", pkgConfig: "libpq"),
        .target(name: "Storage", dependencies: ["Bus", "CSQLite", "CPostgres"], path: "Sources/Plugins/Support/Storage", swiftSettings: strict),
        // OpenSSL libcrypto from the system (libssl-dev): scrypt, SHA-256, HMAC, CSPRNG.
        .systemLibrary(name: "COpenSSL", path: "Sources/Plugins/Shims/COpenSSL", pkgConfig: "libcrypto"),
        .target(name: "Crypto", dependencies: ["Bus", "COpenSSL"], path: "Sources/Plugins/Support/Crypto", swiftSettings: strict),
        // The event types each plugin publishes, apart from the plugins, so consumers import
        // the events they react to without importing the publisher.
        .target(name: "Contracts", dependencies: ["Bus"], path: "Sources/Plugins/Contracts", exclude: ["README.md"], swiftSettings: strict),
        // Accounts and sessions (io.appd.Auth), the session and onboarding gates.
        .target(name: "Auth", dependencies: ["Bus", "Contracts", "HTTP", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Auth", swiftSettings: strict),
        // Owner-scoped todos (io.appd.Todos).
        .target(name: "Todos", dependencies: ["Bus", "Contracts", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Todos", swiftSettings: strict),
        // Products, entitlements from provider webhooks, the paywall gate (io.appd.Payments).
        .target(
            name: "Payments", dependencies: ["Bus", "Contracts", "CSystem", "HTTP", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Payments",
            swiftSettings: strict),
        // HTTP/1.1 for every plugin: the client (LLM providers), the server on an event loop
        // (payments webhooks), response and SSE parsing.
        .target(name: "HTTP", dependencies: ["Bus", "CSystem", "CNet"], path: "Sources/Plugins/Support/HTTP", swiftSettings: strict),
        // Outbound TCP and TLS (OpenSSL libssl) with timeouts and abort, for the LLM providers.
        .target(name: "CNet", path: "Sources/Plugins/Shims/CNet", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // Conversations and streamed LLM replies (io.appd.Chat), the provider seam.
        .target(
            name: "Chat", dependencies: ["Bus", "Contracts", "HTTP", "Storage", "Crypto", "PluginKit"], path: "Sources/Plugins/Chat",
            swiftSettings: strict),
        // Rating prompts from bus signals (io.appd.Rating).
        .target(name: "Rating", dependencies: ["Bus", "Contracts", "Storage", "PluginKit"], path: "Sources/Plugins/Rating", swiftSettings: strict),
        // An example external plugin in Swift (contrib/plugins/greeter), also used by the tests.
        .executableTarget(name: "appd-plugin-greeter", dependencies: ["Bus"], path: "Sources/Plugins/Examples/Greeter", swiftSettings: strict),
        // What every plugin implements and the host that starts, supervises and stops them.
        .target(name: "PluginKit", dependencies: ["Bus", "CSystem", "Storage", "Crypto"], path: "Sources/Plugins/Kit", swiftSettings: strict),

        .executableTarget(name: "appd", dependencies: ["Bus", "Storage", "PluginKit", "HTTP", "Auth", "Todos", "Payments", "Chat", "Rating"], path: "Sources/appd", swiftSettings: strict),
        // appctl's commands and parsers (a library, so the fuzzers can reach the parsers), and the
        // thin executable.
        .target(name: "AppctlKit", dependencies: ["Bus"], path: "Sources/appctl/AppctlKit", swiftSettings: strict),
        .executableTarget(
            name: "appctl", dependencies: ["AppctlKit"], path: "Sources/appctl/Main", swiftSettings: strict,
            // A CLI is started once per command: link the Swift runtime statically (≈1 ms faster start).
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]),

        // The varlink certification both ways against the reference implementation (CI runs it).
        .executableTarget(name: "varlink-certification", dependencies: ["Bus"], path: "Tests/Certification", swiftSettings: strict),
        // What the plugin test targets share: one harness, a test clock, waiting on conditions.
        .target(name: "TestSupport", dependencies: ["Bus", "Storage", "PluginKit", "Crypto", "Auth"], path: "Tests/Support", swiftSettings: strict),
        .testTarget(name: "BusTests", dependencies: ["TestSupport", "Bus", "CSystem"], path: "Tests/BusTests", swiftSettings: strict),
        .testTarget(name: "PluginKitTests", dependencies: ["TestSupport", "Contracts", "PluginKit", "Storage", "Bus"], path: "Tests/PluginKitTests", swiftSettings: strict),
        .testTarget(name: "AuthTests", dependencies: ["TestSupport", "Contracts", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/AuthTests", swiftSettings: strict),
        .testTarget(name: "TodosTests", dependencies: ["TestSupport", "Contracts", "Todos", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/TodosTests", swiftSettings: strict),
        .testTarget(
            name: "PaymentsTests", dependencies: ["TestSupport", "Contracts", "Payments", "Auth", "Bus", "Storage", "PluginKit", "Crypto"], path: "Tests/PaymentsTests",
            swiftSettings: strict),
        .testTarget(
            name: "ChatTests", dependencies: ["TestSupport", "Contracts", "Chat", "HTTP", "Payments", "Auth", "Bus", "CSystem", "Storage", "PluginKit", "Crypto"], path: "Tests/ChatTests",
            swiftSettings: strict),
        .testTarget(
            name: "RatingTests", dependencies: ["TestSupport", "Contracts", "Rating", "Todos", "Chat", "Payments", "Auth", "Bus", "Storage", "PluginKit", "Crypto"],
            path: "Tests/RatingTests", swiftSettings: strict),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets"], path: "Tests/FuzzTests", swiftSettings: strict),
        .testTarget(name: "HTTPTests", dependencies: ["TestSupport", "HTTP", "Bus", "CSystem"], path: "Tests/HTTPTests", swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "TestSupport"], path: "Tests/CryptoTests", swiftSettings: strict),
        .testTarget(name: "StorageTests", dependencies: ["TestSupport", "Contracts", "Storage", "Bus"], path: "Tests/StorageTests", swiftSettings: strict),
        // Runs the real appd and appctl binaries (built beside the tests by `swift test`).
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport"], path: "Tests/EndToEndTests", exclude: [], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)

// swift-tools-version:6.0
import PackageDescription

// A template app's layers over AppdClient, runnable on Linux: the composition root
// (AppContainer), a session controller on the auth states, an offline-first todos view model
// over OfflineTodos, a chat view model streaming replies, errors mapped to the app's AppError.
// The view models' tests use AppdClientTesting's fakes; `todo-demo` runs the flow against appd.
let package = Package(
    name: "TodoDemo",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(name: "appd", path: "../..")],
    targets: [
        .target(name: "TodoDemoCore", dependencies: [.product(name: "AppdClient", package: "appd")]),
        .executableTarget(name: "todo-demo", dependencies: ["TodoDemoCore", .product(name: "AppdClient", package: "appd")]),
        .testTarget(
            name: "TodoDemoCoreTests",
            dependencies: ["TodoDemoCore", .product(name: "AppdClient", package: "appd"), .product(name: "AppdClientTesting", package: "appd")]),
    ]
)

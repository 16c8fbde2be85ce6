// SPDX-License-Identifier: Apache-2.0

/// A setting appd no longer has, and what replaced it. Setting one — in the config file, as
/// `APPD_…` or as a flag — stops the start (exit 78 / 64) with the replacement named, instead of
/// being ignored or taken for a typo.
struct RemovedConfigKey: Sendable {
    let name: String
    let flag: String
    let instead: String

    var environment: String { ConfigKey(name: name, flag: flag, help: "") { _, _ throws(ConfigProblem) in }.environment }
    var reason: String { "was removed: \(instead)" }

    static let all: [RemovedConfigKey] = [
        RemovedConfigKey(
            name: "webhookListen", flag: "--webhook-listen",
            instead: "payment webhooks are routes of the app-facing HTTP server; set httpListen (--http-listen) to the same "
                + "loopback address, and the providers' URLs (/webhooks/<provider>) stay as they are")
    ]

    static func named(_ name: String) -> RemovedConfigKey? { all.first { $0.name == name } }
    static func flagged(_ flag: String) -> RemovedConfigKey? { all.first { $0.flag == flag } }
}

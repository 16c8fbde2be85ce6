// SPDX-License-Identifier: Apache-2.0
/// What appd refuses an external plugin's manifest whatever its files look like: a built-in
/// plugin's name (topics, credentials and statuses are keyed by names), and appd's own
/// configuration variables, which carry its secrets (database URL, API keys, webhook secrets).
/// A refused plugin is listed as failed with the reason and never started.
public struct PluginAdmission: Sendable {
    /// Names no external plugin may take: the built-in plugins' (enabled or not) and appd's own.
    public var reservedNames: Set<String> = ["appd", "appctl", "daemon", "bus", "auth", "todos", "payments", "chat", "rating"]
    /// appd's environment variables (`APPD_DATABASE`, `APPD_CHAT_API_KEY`, …) that a manifest
    /// may not ask for; the wiring adds every configuration key's.
    public var withheldVariables: Set<String> = ["APPD_CONFIG"]
    /// Prefixes withheld whole: libpq reads its password and keys from `PG…` variables.
    public var withheldPrefixes: [String] = ["PG"]

    public init() {}

    /// Why `manifest` may not run, or nil.
    public func refusal(of manifest: ExternalManifest) -> String? {
        if reservedNames.contains(manifest.name) {
            return "the name '\(manifest.name)' belongs to a built-in plugin or to appd; rename the plugin in its plugin.json"
        }
        let withheld = manifest.environment.filter { name in
            withheldVariables.contains(name) || withheldPrefixes.contains(where: { name.hasPrefix($0) })
        }
        if !withheld.isEmpty {
            return "'environment' asks for \(withheld.sorted().joined(separator: ", ")): appd's own configuration, which carries its secrets, "
                + "is never passed to plugins; give the plugin a variable of its own"
        }
        return nil
    }
}

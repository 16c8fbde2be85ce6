// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Bus

/// A configuration value that is wrong: which key, where it came from, and what is wrong.
struct ConfigError: Error, CustomStringConvertible {
    let key: String
    let source: String
    let reason: String
    var description: String { "invalid configuration: \(key) (from \(source)) \(reason)" }
}

/// Builds the effective configuration from the layers, in order of precedence.
enum ConfigLoader {
    /// The config file used when none is named: root `/etc/appd/appd.json`, others
    /// `$XDG_CONFIG_HOME/appd/appd.json` or `~/.config/appd/appd.json`; none without a home
    /// (never a path under /tmp, where any local user could plant one).
    static func defaultFile() -> String? {
        if getuid() == 0 { return "/etc/appd/appd.json" }
        if let config = SocketPath.environment("XDG_CONFIG_HOME"), !config.isEmpty { return config + "/appd/appd.json" }
        guard let home = SocketPath.environment("HOME"), !home.isEmpty else { return nil }
        return home + "/.config/appd/appd.json"
    }

    /// defaults < file (`--config`, `APPD_CONFIG`, or the default file when it exists) <
    /// `APPD_*` environment < flags.
    static func load(flags: [(key: ConfigKey, value: String)], configFile: String?) throws(ConfigError) -> (AppdConfig, String?) {
        var config = AppdConfig()
        let explicit = configFile ?? SocketPath.environment("APPD_CONFIG").flatMap { $0.isEmpty ? nil : $0 }
        let path = explicit ?? defaultFile()
        var used: String?
        if let path, let text = readFile(path) {
            try applyFile(text, path: path, to: &config)
            used = path
        } else if let explicit {
            throw ConfigError(key: "config", source: explicit, reason: "cannot be read: \(String(cString: strerror(errno)))")
        }
        for removed in RemovedConfigKey.all {
            guard let text = SocketPath.environment(removed.environment), !text.isEmpty else { continue }
            throw ConfigError(key: removed.name, source: removed.environment, reason: removed.reason)
        }
        for key in ConfigKey.all {
            guard let text = SocketPath.environment(key.environment), !text.isEmpty else { continue }
            try apply(key, textValue(text, for: key), source: key.environment, to: &config)
        }
        for (key, text) in flags {
            try apply(key, textValue(text, for: key), source: key.flag, to: &config)
        }
        if config.dataDirectory.isEmpty {
            throw ConfigError(
                key: "dataDirectory", source: "the environment",
                reason: "has no default: HOME and XDG_DATA_HOME are unset, and appd never falls back to /tmp; pass --data-dir (or set HOME)")
        }
        do {
            config.limits = try config.limits.validated()
        } catch {
            throw ConfigError(key: error.name, source: "the combined configuration", reason: error.reason)
        }
        // Apple's server side needs its keys together, readable and private: checked here so a
        // mistake stops appd at start (exit 78) instead of leaving auth failed.
        do {
            _ = try config.resolvedIdentity()
        } catch let problem as ConfigProblem {
            throw ConfigError(key: "appleTeamId", source: "the combined configuration", reason: problem.reason)
        } catch {
            throw ConfigError(key: "appleTeamId", source: "the combined configuration", reason: "\(error)")
        }
        return (config, used)
    }

    static func applyFile(_ text: String, path: String, to config: inout AppdConfig) throws(ConfigError) {
        let json: JSONValue
        do {
            json = try JSONParser.parse(Array(text.utf8))
        } catch {
            throw ConfigError(key: "config", source: path, reason: "is not valid JSON: \(error)")
        }
        guard case .object(let members) = json else {
            throw ConfigError(key: "config", source: path, reason: "must be a JSON object of settings")
        }
        for (name, value) in members.sorted(by: { $0.key < $1.key }) {
            if let removed = RemovedConfigKey.named(name) { throw ConfigError(key: name, source: path, reason: removed.reason) }
            guard let key = ConfigKey.all.first(where: { $0.name == name }) else {
                let hint = EditDistance.closest(to: name, in: ConfigKey.all.map(\.name))
                throw ConfigError(key: name, source: path, reason: "is not a setting" + (hint.map { "; did you mean '\($0)'?" } ?? ""))
            }
            try apply(key, value, source: path, to: &config)
        }
    }

    static func apply(_ key: ConfigKey, _ value: JSONValue, source: String, to config: inout AppdConfig) throws(ConfigError) {
        do {
            try key.apply(&config, value)
        } catch {
            throw ConfigError(key: key.name, source: source, reason: error.reason)
        }
    }

    /// Text from the environment or a flag, as the JSON the key expects.
    static func textValue(_ text: String, for key: ConfigKey) -> JSONValue {
        if ["socket", "dataDirectory", "adminGroup", "logLevel", "disabledPlugins"].contains(key.name) { return .string(text) }
        if text == "null" { return .null }
        if let int = Int64(text) { return .int(int) }
        if let double = Double(text) { return .double(double) }
        return .string(text)
    }

    static func readFile(_ path: String) -> String? {
        // A config file is small; a huge one is refused.
        FileSystem.readFile(path, limit: 1 << 20).map { String(decoding: $0, as: UTF8.self) }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Console
import HTTP

/// The keys of backups and the operator console (part of `ConfigKey.all`).
extension ConfigKey {
    static let operations: [ConfigKey] = [
        ConfigKey(name: "backupDirectory", flag: "--backup-directory", help: "Where backups are made (default: <data dir>/backups); an absolute path.") {
            config, value throws(ConfigProblem) in
            guard let text = value.stringValue, text.hasPrefix("/") else { throw ConfigProblem("needs an absolute path") }
            config.backupDirectory = text
        },
        ConfigKey(
            name: "backupScheduleSeconds", flag: "--backup-schedule-seconds",
            help: "Make a backup every this many seconds (86400: daily), keeping backupKeep of them (default: 0, off)."
        ) { config, value throws(ConfigProblem) in
            guard case .int(let n) = value, n >= 0, n <= 30 * 86_400 else { throw ConfigProblem("needs a whole number of seconds from 0 (off) to 2592000") }
            config.backupScheduleSeconds = Int(n)
        },
        integer("backupKeep", "--backup-keep", "Scheduled backups kept, the newest (default: 7).") { $0.backupKeep = $1 },
        ConfigKey(
            name: "consoleListen", flag: "--console-listen",
            help: "The operator console in the browser on host:port, e.g. 127.0.0.1:8090; keep it on loopback or behind the TLS proxy (default: off)."
        ) { config, value throws(ConfigProblem) in
            if value == .null { config.console.listen = nil; return }
            guard let text = value.stringValue, (try? HTTPListenAddress(text)) != nil else { throw ConfigProblem("needs host:port, e.g. 127.0.0.1:8090 or [::1]:8090") }
            config.console.listen = text
        },
        ConfigKey(
            name: "consoleUrl", flag: "--console-url",
            help:
                "The console's address as people open it, for the links appctl console prints, e.g. https://console.example.com; https marks its cookie Secure (default: "
                + "http://<consoleListen>)."
        ) { config, value throws(ConfigProblem) in
            if value == .null { config.console.publicURL = nil; return }
            guard let text = value.stringValue, text.hasPrefix("https://") || text.hasPrefix("http://"), !text.contains("?"), !text.contains("#") else {
                throw ConfigProblem("needs an http(s) URL without query, e.g. https://console.example.com")
            }
            config.console.publicURL = text
        },
        ConfigKey(name: "consoleLinkSeconds", flag: "--console-link-seconds", help: "How long a console sign-in link works, unused (default: 120).") {
            config, value throws(ConfigProblem) in
            guard case .int(let n) = value, n >= 10, n <= 3600 else { throw ConfigProblem("needs 10 to 3600 seconds") }
            config.console.linkLifetime = .seconds(n)
        },
        ConfigKey(
            name: "consoleSessionMinutes", flag: "--console-session-minutes",
            help: "A console session ends after this many idle minutes, and after 12 hours at the latest (default: 30)."
        ) { config, value throws(ConfigProblem) in
            guard case .int(let n) = value, n >= 1, n <= 720 else { throw ConfigProblem("needs 1 to 720 minutes") }
            config.console.sessionIdle = .seconds(n * 60)
        },
    ]
}

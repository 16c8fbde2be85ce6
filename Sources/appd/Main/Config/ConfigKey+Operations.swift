/// The keys of backups (part of `ConfigKey.all`).
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
    ]
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import Glibc

/// Every declared setting by key, and the checks a value and a scope pass before they are kept.
struct SettingsCatalog: Sendable {
    let all: [SettingDeclaration]
    private let byKey: [String: SettingDeclaration]

    /// The first declaration of a key wins; plugins namespace their keys (`chat.memory`).
    init(_ declarations: [SettingDeclaration]) {
        var byKey: [String: SettingDeclaration] = [:]
        var all: [SettingDeclaration] = []
        for declaration in declarations where byKey[declaration.key] == nil {
            byKey[declaration.key] = declaration
            all.append(declaration)
        }
        self.all = all.sorted { $0.key < $1.key }
        self.byKey = byKey
    }

    func declaration(_ key: String) throws(SettingsError) -> SettingDeclaration {
        guard let declaration = byKey[key] else { throw .unknownSetting(key: String(key.prefix(200))) }
        return declaration
    }

    static let maxScope = 200

    /// '' for the account's own value, else the item's id.
    static func checkedScope(_ scope: String?) throws(SettingsError) -> String {
        guard let scope, !scope.isEmpty else { return "" }
        if let problem = TextLimit(characters: maxScope).violation(of: scope) { throw .validation("scope", problem) }
        guard !scope.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .validation("scope", "holds control characters")
        }
        return scope
    }

    func scope(_ scope: String?, of declaration: SettingDeclaration) throws(SettingsError) -> String {
        let checked = try Self.checkedScope(scope)
        if !checked.isEmpty, !declaration.scoped {
            throw .validation("scope", "'\(declaration.key)' is set for the account only; leave scope out")
        }
        return checked
    }

    /// Refuses a value that is not of the declared type, and a locale or time zone that is not one.
    func check(_ value: SettingValue, for declaration: SettingDeclaration) throws(SettingsError) {
        if let problem = declaration.problem(with: value) { throw .validation("value", problem) }
        guard let text = value.string, !text.isEmpty else { return }
        switch declaration.key {
        case "locale" where !Self.isLanguageTag(text):
            throw .validation("value", "is a BCP 47 language tag such as en, pt-BR or zh-Hant-TW")
        case "timeZone" where !Self.isTimeZone(text):
            throw .validation("value", "is an IANA time zone such as Europe/Paris, America/New_York or UTC")
        default:
            return
        }
    }

    /// A language subtag (2–3 letters) then subtags of 1–8 letters or digits, dash-separated.
    static func isLanguageTag(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { part in (1...8).contains(part.count) && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    /// A name in the system's time zone database (`/usr/share/zoneinfo`); where there is none,
    /// a name of the database's shape (Area/Location, letters, digits, `_+-`).
    static func isTimeZone(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let shaped =
            text.count <= 64
            && parts.allSatisfy { part in
                !part.isEmpty && part != "." && part != ".." && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_+-".contains($0)) }
            }
        guard shaped else { return false }
        let database = "/usr/share/zoneinfo"
        guard access(database, F_OK) == 0 else { return true }
        var info = stat()
        return stat(database + "/" + text, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
}

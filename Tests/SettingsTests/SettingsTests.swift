// SPDX-License-Identifier: Apache-2.0
import Bus
import Contracts
import PluginKit
import Storage
import Testing
import TestSupport
@testable import Auth
@testable import Settings

extension PluginHarness {
    /// Auth and settings, with two keys a plugin would declare.
    static func settings(maxValues: Int = 1_000) async throws -> PluginHarness {
        try await make { _ in
            var options = SettingsPlugin.Options()
            options.maxValuesPerUser = maxValues
            return [
                try AuthPlugin.testing(),
                SettingsPlugin(
                    declared: [
                        SettingDeclaration(key: "demo.sound", type: .bool, default: true, plugin: "demo", description: "Sounds on"),
                        SettingDeclaration(key: "demo.style", type: .enum, values: ["bubble", "prompt"], default: "bubble", scoped: true, plugin: "demo", description: "Style"),
                        SettingDeclaration(key: "demo.size", type: .int, default: 12, plugin: "demo", description: "Size"),
                    ], options: options),
            ]
        }
    }

    func set(_ key: String, _ value: SettingValue, scope: String? = nil, expected: Int64? = nil, as caller: Caller) async throws -> Setting {
        try await wire(SettingsInterface.Set(key: key, scope: scope, value: value, expectedVersion: expected), as: caller).setting
    }

    func get(_ key: String, scope: String? = nil, as caller: Caller) async throws -> Setting {
        try await wire(SettingsInterface.Get(key: key, scope: scope), as: caller).setting
    }
}

func expectSettingsError(_ name: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(name)", sourceLocation: sourceLocation)
    } catch let error as SettingsError {
        #expect(error.wireName == "io.appd.Settings.\(name)", "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite(.cleansUp) struct SettingsTests {
    @Test func declaredKeysShowTheirDefaultsUntilSet() async throws {
        let h = try await PluginHarness.settings()
        let ada = try await h.user("ada@example.com").caller
        let declared = try await h.wire(SettingsInterface.Declared(), as: ada).declarations
        #expect(declared.map(\.key) == ["demo.size", "demo.sound", "demo.style", "locale", "timeZone"])
        let sound = try await h.get("demo.sound", as: ada)
        #expect(sound == Setting(key: "demo.sound", value: true, isDefault: true, version: 0))
        let set = try await h.set("demo.sound", false, as: ada)
        #expect(set.value == false && !set.isDefault && set.version == 1 && set.updatedAt != nil)
        #expect(try await h.get("demo.sound", as: ada) == set)
        let listed = try await h.wire(SettingsInterface.List(), as: ada).settings
        #expect(listed.map(\.key) == declared.map(\.key) && listed.first { $0.key == "demo.sound" } == set)
        // Another user sees the default.
        let bob = try await h.user("bob@example.com").caller
        #expect(try await h.get("demo.sound", as: bob).isDefault)
    }

    @Test func valuesAreCheckedAgainstTheirDeclaration() async throws {
        let h = try await PluginHarness.settings()
        let ada = try await h.user("ada@example.com").caller
        await expectSettingsError("UnknownSetting") { _ = try await h.set("demo.nope", true, as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("demo.sound", "yes", as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("demo.size", "12", as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("demo.size", SettingValue(bool: true, int: 12), as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("demo.size", SettingValue(), as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("demo.style", "cards", as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("demo.sound", false, scope: "c_1", as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("locale", "not a tag", as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("timeZone", "Mars/Olympus_Mons", as: ada) }
        await expectSettingsError("ValidationFailed") { _ = try await h.set("timeZone", "../../etc/passwd", as: ada) }
        #expect(try await h.set("locale", "pt-BR", as: ada).value == "pt-BR")
        #expect(try await h.set("timeZone", "Europe/Lisbon", as: ada).value == "Europe/Lisbon")
        #expect(try await h.set("demo.size", 14, as: ada).value == 14)
    }

    @Test func versionsKeepTwoDevicesFromOverwritingEachOther() async throws {
        let h = try await PluginHarness.settings()
        let ada = try await h.user("ada@example.com").caller
        let phone = try await h.set("demo.size", 14, expected: 0, as: ada)
        #expect(phone.version == 1)
        // The tablet last saw "never set": its write is refused with the value as it stands.
        do {
            _ = try await h.set("demo.size", 16, expected: 0, as: ada)
            Issue.record("a stale write passed")
        } catch SettingsError.conflict(let current) {
            #expect(current == phone)
        }
        let reset = try await h.wire(SettingsInterface.Reset(key: "demo.size", expectedVersion: 1), as: ada).setting
        #expect(reset.isDefault && reset.value == 12 && reset.version == 2)
        // A device holding version 1 cannot write over the reset.
        await expectSettingsError("Conflict") { _ = try await h.set("demo.size", 20, expected: 1, as: ada) }
        #expect(try await h.set("demo.size", 20, expected: 2, as: ada).version == 3)
    }

    @Test func anItemsValueOverridesTheAccountsThenFallsBack() async throws {
        let h = try await PluginHarness.settings()
        let ada = try await h.user("ada@example.com").caller
        _ = try await h.set("demo.style", "prompt", as: ada)
        var item = try await h.get("demo.style", scope: "c_42", as: ada)
        #expect(item.value == "prompt" && !item.isDefault && item.version == 0 && item.scope == "c_42")
        item = try await h.set("demo.style", "bubble", scope: "c_42", as: ada)
        #expect(item.value == "bubble" && item.version == 1)
        #expect(try await h.get("demo.style", as: ada).value == "prompt")
        #expect(try await h.wire(SettingsInterface.List(scope: "c_42"), as: ada).settings.map(\.key) == ["demo.style"])
        _ = try await h.wire(SettingsInterface.Reset(key: "demo.style", scope: "c_42"), as: ada)
        #expect(try await h.get("demo.style", scope: "c_42", as: ada).value == "prompt")
    }

    @Test func changesAreEventedToTheOwnerAndErasedWithTheAccount() async throws {
        let h = try await PluginHarness.settings(maxValues: 2)
        let user = try await h.user("ada@example.com")
        let ada = user.caller
        let changes = try h.bus.subscribe("settings.changed")
        let written = try await h.set("demo.sound", false, as: ada)
        var iterator = changes.makeAsyncIterator()
        let event = try #require(try await iterator.next())
        #expect(try event.json()["userId"]?.stringValue == user.userId)
        #expect(try event.json()["setting"]?.decode(as: Setting.self) == written)
        // At most maxValues rows per account.
        _ = try await h.set("demo.size", 1, as: ada)
        await expectSettingsError("ValidationFailed") { _ = try await h.set("locale", "en", as: ada) }
        // Changing a value it holds is not a new row.
        _ = try await h.set("demo.size", 2, as: ada)
        let services = h.plugin(SettingsPlugin.self).services(h.context)
        let tasks = services.map { service in Task { try await service.run() } }
        _ = try await h.wire(AuthInterface.DeleteAccount(password: "password for ada@example.com"), as: ada)
        #expect(try await eventually { try await h.count("SELECT COUNT(*) AS n FROM settings_values") == 0 })
        for task in tasks { task.cancel() }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

@testable import AppctlKit

/// appctl's commands are declared types; their usage and help come from the declarations. The
/// golden file holds the help of the whole tree: a change to any command's words, options or
/// help shows up here, and is accepted by regenerating it (APPCTL_UPDATE_GOLDEN=1 swift test
/// --filter CommandTreeTests) and reading the diff.
@Suite struct CommandTreeTests {

    /// A shown id is typed back as an argument: it never begins with `-` (an option), which a
    /// time-first id's last 6 characters did about once in 64 (an end-to-end test caught it).
    @Test func aShortIDNeverBeginsWithADash() {
        #expect(TodosGroup.shortID("t_0Qm3xY9aAbcdefghijk") == "fghijk")
        #expect(TodosGroup.shortID("t_0Qm3xY9aAbcde-ghijk") == "e-ghijk")
        #expect(TodosGroup.shortID("t_0Qm3xY9aAbcd--ghijk") == "d--ghijk")
        #expect(TodosGroup.shortID("------") == "------", "nothing longer to take")
        #expect(TodosGroup.shortID("abc") == "abc")
    }
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("help.golden")

    /// `appctl --help`, then every command's and group's help, in the order of the tree.
    static func wholeTree() -> String {
        var text = "=== appctl --help\n" + Appctl.overview
        for node in Appctl.tree {
            switch node {
            case .leaf(let leaf):
                text += "=== appctl \(leaf.command) --help\n" + leaf.help
            case .group(let group):
                text += "=== appctl \(group.name) --help\n" + group.help
                for leaf in group.leaves { text += "=== appctl \(leaf.command) --help\n" + leaf.help }
            }
        }
        return text
    }

    @Test func theHelpOfTheWholeTreeIsTheGoldenOne() throws {
        let now = Self.wholeTree()
        if ProcessInfo.processInfo.environment["APPCTL_UPDATE_GOLDEN"] == "1" {
            try now.write(to: Self.golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: Self.golden, encoding: .utf8)
        let (a, b) = (expected.split(separator: "\n", omittingEmptySubsequences: false), now.split(separator: "\n", omittingEmptySubsequences: false))
        let first = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(
            now == expected,
            "help differs from help.golden at line \((first?.offset ?? min(a.count, b.count)) + 1): \(first.map { "'\($0.element.0)' → '\($0.element.1)'" } ?? "length")")
    }

    @Test func everyDeclaredParameterIsInItsUsageAndHelp() {
        for leaf in Self.leaves {
            for parameter in leaf.parameters {
                #expect(leaf.usage.contains(parameter.usage), "\(leaf.command): \(parameter.name) missing from '\(leaf.usage)'")
                #expect(leaf.help.contains(parameter.helpText), "\(leaf.command): \(parameter.name) missing from its help")
            }
        }
    }

    @Test func everyPathIsUniqueAndReachable() {
        let paths = Self.leaves.map { $0.command }
        #expect(Set(paths).count == paths.count, "\(paths)")
        for leaf in Self.leaves {
            let node = Appctl.node(leaf.path[0])
            switch node {
            case .leaf(let found)?: #expect(found.command == leaf.command)
            case .group(let group)?: #expect(leaf.path.count == 1 ? group.fallback?.command == leaf.command : group.leaf(leaf.path[1])?.command == leaf.command)
            case nil: Issue.record("\(leaf.command) is not in the tree")
            }
        }
    }

    static var leaves: [any Leaf.Type] {
        Appctl.tree.flatMap { node -> [any Leaf.Type] in
            switch node {
            case .leaf(let leaf): [leaf]
            case .group(let group): group.leaves + (group.fallback.map { [$0] } ?? [])
            }
        }
    }
}

/// The parser fills the declared properties: options (last value wins, all values kept),
/// flags, arguments in order, the rest for a list; it refuses a word too many and an unknown
/// option with a suggestion.
@Suite struct DeclaredParsingTests {
    @Test func optionsFlagsAndArgumentsAreFilledIn() throws {
        let add = try TodosAdd.parse(["buy", "--notes", "2%", "oat", "milk", "--due=2026-12-24T18:00:00Z"])
        #expect(add.title == ["buy", "oat", "milk"] && add.notes == "2%" && add.due == "2026-12-24T18:00:00Z")
        let list = try TodosList.parse(["--open"])
        #expect(list.open && !list.done)
        let webhook = try PaymentsWebhook.parse(["--provider", "stripe", "--header", "A=1", "--header", "B=2"])
        #expect(webhook.provider == "stripe" && webhook.$header == ["A=1", "B=2"] && webhook.header == "B=2")
        let revoke = try PaymentsRevoke.parse(["ada@example.com", "pro", "--reason", "refund", "--include-paid"])
        #expect(revoke.email == "ada@example.com" && revoke.entitlement == "pro" && revoke.reason == "refund" && revoke.includePaid)
        let empty = try TodosDone.parse([])
        #expect(empty.id == nil)
    }

    @Test func aWordTooManyAndAnUnknownOptionAreUsageErrors() {
        #expect(message { () throws(AppctlError) in _ = try TodosDone.parse(["t_1", "t_2"]) } == "todos done takes nothing more; 't_2' is one too many")
        #expect(message { () throws(AppctlError) in _ = try Ping.parse(["now"]) } == "ping takes no arguments; 'now' is one too many")
        #expect(message { () throws(AppctlError) in _ = try TodosAdd.parse(["milk", "--note", "x"]) }?.hasPrefix("unknown option '--note'") == true)
        #expect(message { () throws(AppctlError) in _ = try TodosAdd.parse(["milk", "--notes"]) } == "--notes needs a value")
    }

    func message(_ body: () throws(AppctlError) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            if case .usage(let text, _) = error { return text.components(separatedBy: "\n").first }
            return "\(error)"
        }
    }
}

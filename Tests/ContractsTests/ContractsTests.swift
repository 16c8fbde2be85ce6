// SPDX-License-Identifier: Apache-2.0
import BusCore
import Contracts
import Foundation
import Testing

/// One definition per interface: each built-in interface's Swift types (commands, replies,
/// named types, errors) say exactly what its IDL text says. A field changed in one and not the
/// other fails here, naming the method or error, the field, and both sides.
@Suite struct ContractsTests {
    struct Contract: Sendable, CustomStringConvertible {
        let idl: String
        let commands: [any Command.Type]
        let streams: [any StreamingCommand.Type]
        let errors: [String]
        var description: String { String(idl.split(separator: "\n").first { $0.hasPrefix("interface ") }?.dropFirst(10) ?? "?") }
    }

    static let contracts: [Contract] = [
        Contract(idl: AuthInterface.idl, commands: AuthInterface.commands, streams: AuthInterface.streams, errors: differences(AuthInterface.Errors.self, AuthInterface.idl)),
        Contract(idl: TodosInterface.idl, commands: TodosInterface.commands, streams: TodosInterface.streams, errors: differences(TodosInterface.Errors.self, TodosInterface.idl)),
        Contract(idl: ChatInterface.idl, commands: ChatInterface.commands, streams: ChatInterface.streams, errors: differences(ChatInterface.Errors.self, ChatInterface.idl)),
        Contract(
            idl: PaymentsInterface.idl, commands: PaymentsInterface.commands, streams: PaymentsInterface.streams,
            errors: differences(PaymentsInterface.Errors.self, PaymentsInterface.idl)),
        Contract(
            idl: RatingInterface.idl, commands: RatingInterface.commands, streams: RatingInterface.streams, errors: differences(RatingInterface.Errors.self, RatingInterface.idl)),
        Contract(idl: FilesInterface.idl, commands: FilesInterface.commands, streams: FilesInterface.streams, errors: differences(FilesInterface.Errors.self, FilesInterface.idl)),
        Contract(
            idl: SettingsInterface.idl, commands: SettingsInterface.commands, streams: SettingsInterface.streams,
            errors: differences(SettingsInterface.Errors.self, SettingsInterface.idl)),
        Contract(
            idl: DaemonInterface.idl, commands: DaemonInterface.commands, streams: DaemonInterface.streams, errors: differences(DaemonInterface.Errors.self, DaemonInterface.idl)),
        Contract(
            idl: BackupInterface.idl, commands: BackupInterface.commands, streams: BackupInterface.streams, errors: differences(BackupInterface.Errors.self, BackupInterface.idl)),
        Contract(
            idl: ConsoleInterface.idl, commands: ConsoleInterface.commands, streams: ConsoleInterface.streams,
            errors: differences(ConsoleInterface.Errors.self, ConsoleInterface.idl)),
        Contract(
            idl: ExportInterface.idl, commands: ExportInterface.commands, streams: ExportInterface.streams, errors: differences(ExportInterface.Errors.self, ExportInterface.idl)),
    ]

    static func differences<E: InterfaceError>(_ type: E.Type, _ idl: String) -> [String] {
        do { return try VarlinkInterface(parsing: idl).differences(errors: type) } catch { return ["\(error)"] }
    }

    @Test(arguments: contracts) func everyMethodIsACommandTypeAndAgreesWithTheIDL(contract: Contract) throws {
        let interface = try VarlinkInterface(parsing: contract.idl)
        var problems: [String] = []
        var typed: [String] = []
        for command in contract.commands {
            problems += check(command, in: interface)
            typed.append(command.method)
        }
        for stream in contract.streams {
            problems += check(stream, in: interface)
            typed.append(stream.method)
        }
        let declared = interface.methods.map { "\(interface.name).\($0.name)" }
        for method in declared where !typed.contains(method) { problems.append("\(method): declared, no command type") }
        for method in typed where !declared.contains(method) { problems.append("\(method): a command type, not declared") }
        #expect(Set(typed).count == typed.count, "a method has two command types: \(typed)")
        #expect(problems == [], "\(problems.joined(separator: "\n"))")
    }

    @Test(arguments: contracts) func everyErrorIsACaseWithItsParameters(contract: Contract) {
        #expect(contract.errors == [], "\(contract.errors.joined(separator: "\n"))")
    }

    /// The HTTP API answers an error with its category's status: each built-in error says which.
    @Test(arguments: contracts) func everyErrorDeclaresItsCategory(contract: Contract) throws {
        let interface = try VarlinkInterface(parsing: contract.idl)
        let undeclared = interface.errors.filter { $0.category == nil }.map(\.name)
        #expect(undeclared == [], "\(interface.name): add a '# category: …' line to \(undeclared)")
    }

    @Test func anErrorsCategoryIsReadFromItsDocAndAnUnknownOneRefused() throws {
        let parsed = try VarlinkInterface(parsing: "interface a.b\nmethod M() -> ()\n# Gone for good.\n# category: gone\nerror Old ()\nerror Plain ()\n")
        #expect(parsed.error("Old")?.category == .gone && parsed.error("Old")?.category?.httpStatus == 410)
        #expect(parsed.error("Plain")?.category == nil)
        #expect(throws: VarlinkIDLError.self) { try VarlinkInterface(parsing: "interface a.b\nmethod M() -> ()\n# category: teapot\nerror Odd ()\n") }
        #expect(Set(ErrorCategory.allCases.map(\.httpStatus)).count == ErrorCategory.allCases.count, "one status per category")
    }

    func check<C: Command>(_ command: C.Type, in interface: VarlinkInterface) -> [String] {
        interface.differences(method: C.method, input: C.self, reply: C.Reply.self)
    }
    func check<C: StreamingCommand>(_ command: C.Type, in interface: VarlinkInterface) -> [String] {
        interface.differences(method: C.method, input: C.self, reply: C.Reply.self)
    }
}

/// The check itself finds a drift in either direction (so the agreement above means something).
@Suite struct ContractDriftTests {
    func interface(_ edit: (String) -> String) throws -> VarlinkInterface {
        try VarlinkInterface(parsing: edit(TodosInterface.idl))
    }

    @Test func aFieldTheIDLMakesOptionalIsFound() throws {
        let idl = try interface { $0.replacingOccurrences(of: "method Add(title: string,", with: "method Add(title: ?string,") }
        let found = idl.differences(method: TodosInterface.Add.method, input: TodosInterface.Add.self, reply: TodosInterface.Add.Reply.self)
        #expect(found == ["io.appd.Todos.Add parameters.title: the IDL says optional (?string), the type requires it (string)"])
    }

    @Test func aFieldOnlyOneSideHasIsFound() throws {
        let idl = try interface { $0.replacingOccurrences(of: "  version: int,\n", with: "  version: int,\n  pinned: bool,\n") }
        let found = idl.differences(method: TodosInterface.Get.method, input: TodosInterface.Get.self, reply: TodosInterface.Get.Reply.self)
        #expect(found == ["io.appd.Todos.Get reply.todo.pinned: declared (bool), missing from the type"])
        let renamed = try interface { $0.replacingOccurrences(of: "method Get(id: string)", with: "method Get(todoId: string)") }
        #expect(
            renamed.differences(method: TodosInterface.Get.method, input: TodosInterface.Get.self, reply: TodosInterface.Get.Reply.self) == [
                "io.appd.Todos.Get parameters.todoId: declared (string), missing from the type",
                "io.appd.Todos.Get parameters.id: in the type (string), not declared",
            ])
    }

    @Test func aTypeChangeIsFound() throws {
        let idl = try interface { $0.replacingOccurrences(of: "-> (deleted: int)", with: "-> (deleted: string)") }
        let found = idl.differences(
            method: TodosInterface.ClearCompleted.method, input: TodosInterface.ClearCompleted.self, reply: TodosInterface.ClearCompleted.Reply.self)
        #expect(found == ["io.appd.Todos.ClearCompleted reply.deleted: the IDL says string, the type says int"])
    }

    @Test func anErrorWhoseParametersDifferOrThatHasNoCaseIsFound() throws {
        let changed = try interface { $0.replacingOccurrences(of: "error QuotaExceeded (limit: int)", with: "error QuotaExceeded (limit: int, held: int)") }
        #expect(changed.differences(errors: TodosError.self) == ["io.appd.Todos.QuotaExceeded.held: declared (int), missing from the type"])
        let added = try interface { $0 + "error Locked ()\n" }
        let found = added.differences(errors: TodosError.self)
        #expect(found.count == 1 && found[0].hasPrefix("io.appd.Todos.Locked: TodosError has no case locked"), "\(found)")
    }
}

/// Errors render themselves to the wire, and a client reads them back as the same value.
@Suite struct InterfaceErrorTests {
    let todo = Todo(id: "t_1", title: "milk", done: false, createdAt: "2026-01-01T00:00:00Z", updatedAt: "2026-01-01T00:00:00Z", version: 3)

    @Test func aCaseIsItsNameAndItsParameters() throws {
        #expect(TodosError.notFound.wireName == "io.appd.Todos.NotFound")
        #expect(TodosError.notFound.wireParameters == [:])
        #expect(TodosError.quotaExceeded(limit: 3).wireParameters == ["limit": .int(3)])
        #expect(TodosError.conflict(todo: todo).wireParameters == ["todo": try JSONValue(encoding: todo)])
        #expect(AuthError.invalidIdToken(reason: .audience).wireParameters == ["reason": .string("audience")])
        let required = PaymentsError.paymentRequired(entitlement: "pro", remaining: 0, resetsAt: "2026-02-01T00:00:00Z")
        #expect(required.wireName == "io.appd.Payments.PaymentRequired")
        #expect(required.wireParameters == ["entitlement": "pro", "remaining": .int(0), "resetsAt": "2026-02-01T00:00:00Z"])
    }

    @Test func theWireFormReadsBackAsTheSameValue() {
        let errors: [any InterfaceError] = [
            TodosError.conflict(todo: todo), TodosError.validation("title", "is empty"), ChatError.quotaExceeded(limit: 2),
            AuthError.tooManyAttempts(retryAfterSeconds: 30), AuthError.invalidCredentials, AuthError.invalidIdToken(reason: .expired),
            PaymentsError.paymentRequired(entitlement: "pro", remaining: 0, resetsAt: nil), RatingError.validation("outcome", "is unknown"),
        ]
        for error in errors {
            let same = roundTrip(error)
            #expect(same, "\(error)")
        }
    }

    func roundTrip<E: InterfaceError>(_ error: E) -> Bool {
        E(wireName: error.wireName, parameters: error.wireParameters) == error
    }

    @Test func theContractsDecodingKnowsEveryInterfacesErrors() {
        let decoding = ErrorDecoding.contracts
        #expect(decoding.error(named: "io.appd.Todos.NotFound", parameters: [:]) as? TodosError == .notFound)
        #expect(decoding.error(named: "io.appd.Daemon.UnknownPlugin", parameters: ["name": "x"]) as? DaemonError == .unknownPlugin(name: "x"))
        #expect(decoding.error(named: "io.appd.Bus.DeadlineExceeded", parameters: ["method": "m"]) == nil)
    }

    @Test func anotherInterfacesNameOrWrongParametersAreNotTheError() {
        #expect(TodosError(wireName: "io.appd.Chat.NotFound", parameters: [:]) == nil)
        #expect(TodosError(wireName: "io.appd.Todos.Missing", parameters: [:]) == nil)
        #expect(TodosError(wireName: "io.appd.Todos.notFound", parameters: [:]) == nil)
        #expect(TodosError(wireName: "io.appd.Todos.QuotaExceeded", parameters: ["limit": "three"]) == nil)
        #expect(AuthError(wireName: "io.appd.Auth.InvalidIdToken", parameters: ["reason": "a future reason"]) == nil)
    }
}

// SPDX-License-Identifier: Apache-2.0
/// A request with exactly one handler and one typed reply.
///
/// ```swift
/// struct AddTodo: Command {
///     static let method = "io.appd.Todos.Add"
///     static let requirements: [Requirement] = [.session, .onboarded]
///     typealias Reply = Todo
///     var title: String
/// }
/// ```
public protocol Command: Codable, Sendable {
    associatedtype Reply: Codable & Sendable
    /// The fully qualified varlink method name, `interface.Method`.
    static var method: String { get }
    /// What the gates must establish before the handler runs.
    static var requirements: [Requirement] { get }
    /// The call changes nothing (a read): a client may send it again when the network failed
    /// or appd was busy, as it may a write that carries an idempotency key.
    static var readsOnly: Bool { get }
}

/// A request whose handler produces a stream of replies (varlink `more`).
public protocol StreamingCommand: Codable, Sendable {
    associatedtype Reply: Codable & Sendable
    static var method: String { get }
    static var requirements: [Requirement] { get }
}

extension Command {
    public static var requirements: [Requirement] { [] }
    public static var readsOnly: Bool { false }
}

extension StreamingCommand {
    public static var requirements: [Requirement] { [] }
}

/// The reply of a command that returns nothing but success.
public struct Empty: Codable, Sendable, Hashable {
    public init() {}
}

extension Command {
    /// The method's name without its interface: `Add` for `io.appd.Todos.Add`.
    public static var name: String { method.methodNameParts.map { String($0.member) } ?? method }
    /// The interface the method belongs to: `io.appd.Todos`.
    public static var interface: String { method.methodNameParts.map { String($0.interface) } ?? method }
}

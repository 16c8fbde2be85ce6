// SPDX-License-Identifier: Apache-2.0
/// A fact that happened, published to any number of subscribers under a dotted topic.
///
/// An event type declares everything the bus needs to route, show and protect it: its topic,
/// the version of its payload's shape, who may see it, and whether it is logged. Its payload
/// type (in varlink IDL syntax, for `io.appd.Bus.Topics`) is derived from its `Codable` shape.
public protocol Event: Codable, Sendable {
    /// Dotted topic, e.g. `todos.completed`.
    static var topic: String { get }
    /// The payload's shape version; raise it when a change would break decoding of old rows,
    /// and teach `upgrade` to bring the old shape forward.
    static var version: Int { get }
    /// Who may receive it over `io.appd.Bus.Subscribe`.
    static var audience: EventAudience { get }
    /// Whether it is written to the event log (the default) or only published live.
    static var durable: Bool { get }
    /// The user it is about (`owner` audience); nil when it is about no user.
    var owner: String? { get }
    /// Brings a payload stored by an older `version` to this version's shape.
    static func upgrade(_ payload: JSONValue, from version: Int) throws -> JSONValue
}

extension Event {
    public static var version: Int { 1 }
    public static var durable: Bool { true }
    public var owner: String? { nil }
    public static func upgrade(_ payload: JSONValue, from version: Int) throws -> JSONValue { payload }
}

/// An event about one user, named by its `userId` field: its owner sees it.
public protocol OwnedEvent: Event {
    var userId: String { get }
}

extension OwnedEvent {
    public static var audience: EventAudience { .owner }
    public var owner: String? { userId }
}

/// Who may receive an event type over `io.appd.Bus.Subscribe` (live and replayed).
public enum EventAudience: Hashable, Sendable, CustomStringConvertible {
    /// The user the event is about; admins too.
    case owner
    /// Peer-credential admins only.
    case admin
    /// Only plugins whose manifest holds this capability (not even admins).
    case capability(String)

    public var description: String {
        switch self {
        case .owner: "owner"
        case .admin: "admin"
        case .capability(let name): "capability:\(name)"
        }
    }

    /// `owner`, `admin` or `capability:NAME`, as manifests and `Topics` spell it.
    public init?(parsing text: String) {
        switch text {
        case "owner": self = .owner
        case "admin": self = .admin
        case let t where t.hasPrefix("capability:") && t.count > 11: self = .capability(String(t.dropFirst(11)))
        default: return nil
        }
    }
}

/// A message that can cause others: a command's envelope or an event. Whatever it causes
/// records its id as the causation id and carries its correlation id on.
public protocol Cause: Sendable {
    var id: MessageID { get }
    var correlationID: MessageID { get }
}

extension Envelope: Cause {}

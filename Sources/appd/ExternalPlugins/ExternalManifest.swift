// SPDX-License-Identifier: Apache-2.0
import Bus

/// An external plugin's `plugin.json` (see docs/plugins.md for the reference).
public struct ExternalManifest: Sendable, Equatable {
    public struct Restart: Sendable, Equatable {
        /// always, on-failure, or never.
        public var policy = "on-failure"
        /// Consecutive failed starts (each within `healthyAfter` of the last) before `failed`.
        public var maxRetries = 5
        public var backoff: Duration = .milliseconds(500)
        public var maxBackoff: Duration = .seconds(30)
    }

    public var name: String
    public var version: String
    /// An absolute path, or a path relative to the plugin's folder.
    public var executable: String
    public var arguments: [String]
    /// Names of appd's environment variables passed on (everything else is withheld).
    public var environment: [String]
    public var interfaces: [String]
    /// Per-method requirements (`io.example.Notes.Add` → `[.session]`).
    public var requirements: [String: [Requirement]]
    /// Requirements of the methods not listed.
    public var defaultRequirements: [Requirement]
    public var subscribes: [String]
    public var publishes: [String]
    public var calls: [String]
    /// The event types it publishes: topic, payload type (IDL), audience, durability, version.
    public var events: [DeclaredEvent]
    /// Named capabilities (`auth.resetTokens`): capability-only events and methods.
    public var capabilities: [String]
    public var restart: Restart
    public var callTimeout: Duration
    /// How long a streamed call may wait for the plugin's next reply (default: `callTimeout`).
    public var streamIdleTimeout: Duration
    public var maxConcurrentCalls: Int
    public var enabled: Bool
    /// What it may reach and use inside its sandbox.
    public var sandbox = SandboxManifest()
    /// Methods (full names) the app-facing HTTP API may route to; none unless listed.
    public var http: Set<String> = []
    /// The method (full name) that gives the plugin's data about one user for that user's data
    /// export (`io.appd.Export`): called by appd with `{"userId": …}`, admin only.
    public var export: String?

    /// Parses and checks a manifest; the error says what to fix.
    public static func parse(_ bytes: [UInt8]) throws(ManifestProblem) -> ExternalManifest {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes, maxDepth: 16) } catch { throw ManifestProblem("plugin.json is not JSON: \(error)") }
        guard let object = json.objectValue else { throw ManifestProblem("plugin.json must be a JSON object") }
        let known: Set<String> = [
            "name", "version", "executable", "arguments", "environment", "interfaces", "requirements", "defaultRequirements", "subscribes",
            "publishes", "calls", "restart", "callTimeoutSeconds", "streamIdleTimeoutSeconds", "maxConcurrentCalls", "enabled", "description",
            "events", "capabilities", "sandbox", "http", "export",
        ]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw ManifestProblem("unknown key '\(unknown)'" + (EditDistance.closest(to: unknown, in: Array(known)).map { "; did you mean '\($0)'?" } ?? ""))
        }
        func string(_ key: String) throws(ManifestProblem) -> String {
            guard let value = object[key]?.stringValue, !value.isEmpty else { throw ManifestProblem("'\(key)' is required (a non-empty string)") }
            return value
        }
        func strings(_ key: String) throws(ManifestProblem) -> [String] {
            guard let value = object[key] else { return [] }
            guard case .array(let items) = value else { throw ManifestProblem("'\(key)' must be a list of strings") }
            let strings = items.compactMap(\.stringValue)
            guard strings.count == items.count else { throw ManifestProblem("'\(key)' must be a list of strings") }
            return strings
        }
        let name = try string("name")
        guard name.utf8.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }), name.first?.isLetter == true else {
            throw ManifestProblem("'name' must be lower-case letters, digits and '-', starting with a letter (it names the plugin in appctl)")
        }
        var manifest = ExternalManifest(
            name: name, version: try string("version"), executable: try string("executable"), arguments: try strings("arguments"),
            environment: try strings("environment"), interfaces: try strings("interfaces"), requirements: [:],
            defaultRequirements: [.session], subscribes: try strings("subscribes"), publishes: try strings("publishes"), calls: try strings("calls"),
            events: [], capabilities: try strings("capabilities"), restart: Restart(), callTimeout: .seconds(30), streamIdleTimeout: .seconds(30), maxConcurrentCalls: 4,
            enabled: true)
        guard !manifest.interfaces.isEmpty else { throw ManifestProblem("'interfaces' must name at least one interface the plugin serves") }
        for interface in manifest.interfaces where VarlinkInterface.isReserved(interface) {
            throw ManifestProblem("'\(interface)' is reserved for appd's own interfaces")
        }
        for pattern in manifest.subscribes + manifest.publishes {
            do { _ = try TopicFilter(pattern) } catch { throw ManifestProblem("'\(pattern)' is not a topic or pattern: \(error)") }
        }
        if let value = object["events"] {
            guard let table = value.objectValue else {
                throw ManifestProblem("'events' must map topics to {\"type\": \"(field: string, ...)\", \"audience\": \"owner\"}")
            }
            for (topic, declaration) in table.sorted(by: { $0.key < $1.key }) {
                let event = try DeclaredEvent.parse(topic: topic, declaration)
                manifest.events.append(event)
                if !manifest.publishes.contains(where: { (try? TopicFilter($0))?.matches(topic) == true }) { manifest.publishes.append(topic) }
            }
        }
        for method in try strings("http") {
            guard manifest.interfaces.contains(where: { method.hasPrefix($0 + ".") && method.count > $0.count + 1 }) else {
                throw ManifestProblem("http: '\(method)' is not a method of a declared interface (use the full name, e.g. \(manifest.interfaces[0]).Method)")
            }
            manifest.http.insert(method)
        }
        if let value = object["defaultRequirements"] {
            manifest.defaultRequirements = try requirementList(value, "defaultRequirements")
        }
        if let value = object["requirements"] {
            guard let table = value.objectValue else { throw ManifestProblem("'requirements' must map method names to lists") }
            for (method, list) in table {
                guard manifest.interfaces.contains(where: { method.hasPrefix($0 + ".") }) else {
                    throw ManifestProblem("requirements: '\(method)' is not a method of a declared interface (use the full name, e.g. \(manifest.interfaces[0]).Method)")
                }
                manifest.requirements[method] = try requirementList(list, "requirements.\(method)")
            }
        }
        if let value = object["export"] {
            guard let method = value.stringValue, manifest.interfaces.contains(where: { method.hasPrefix($0 + ".") && method.count > $0.count + 1 }) else {
                throw ManifestProblem("export: name a method of a declared interface (the full name, e.g. \(manifest.interfaces[0]).ExportUserData)")
            }
            // A user's data leaves through appd's export only: no user may call it directly.
            guard (manifest.requirements[method] ?? manifest.defaultRequirements).contains(.admin) else {
                throw ManifestProblem("export: \(method) must require admin (\"requirements\": {\"\(method)\": [\"admin\"]}); appd calls it as the daemon")
            }
            guard !manifest.http.contains(method) else { throw ManifestProblem("export: \(method) must not be listed under \"http\"") }
            manifest.export = method
        }
        if let restart = object["restart"] {
            guard let table = restart.objectValue else { throw ManifestProblem("'restart' must be an object") }
            if let policy = table["policy"] {
                guard let text = policy.stringValue, ["always", "on-failure", "never"].contains(text) else {
                    throw ManifestProblem("restart.policy is always, on-failure or never")
                }
                manifest.restart.policy = text
            }
            if let retries = table["maxRetries"] {
                guard case .int(let n) = retries, n >= 0, n <= 1000 else { throw ManifestProblem("restart.maxRetries must be 0 to 1000") }
                manifest.restart.maxRetries = Int(n)
            }
            if let backoff = table["backoffSeconds"] { manifest.restart.backoff = try seconds(backoff, "restart.backoffSeconds") }
            if let cap = table["maxBackoffSeconds"] { manifest.restart.maxBackoff = try seconds(cap, "restart.maxBackoffSeconds") }
        }
        if let timeout = object["callTimeoutSeconds"] { manifest.callTimeout = try seconds(timeout, "callTimeoutSeconds") }
        manifest.streamIdleTimeout = manifest.callTimeout
        if let idle = object["streamIdleTimeoutSeconds"] {
            manifest.streamIdleTimeout = try seconds(idle, "streamIdleTimeoutSeconds", upTo: 86_400)
        }
        if let concurrent = object["maxConcurrentCalls"] {
            guard case .int(let n) = concurrent, n >= 1, n <= 64 else { throw ManifestProblem("maxConcurrentCalls must be 1 to 64") }
            manifest.maxConcurrentCalls = Int(n)
        }
        if let enabled = object["enabled"] {
            guard case .bool(let flag) = enabled else { throw ManifestProblem("'enabled' must be true or false") }
            manifest.enabled = flag
        }
        if let sandbox = object["sandbox"] { manifest.sandbox = try SandboxManifest.parse(sandbox) }
        return manifest
    }

    static func seconds(_ value: JSONValue, _ key: String, upTo limit: Double = 3600) throws(ManifestProblem) -> Duration {
        let number: Double
        switch value {
        case .int(let i): number = Double(i)
        case .double(let d): number = d
        default: throw ManifestProblem("\(key) must be a number of seconds")
        }
        guard number > 0, number <= limit else { throw ManifestProblem("\(key) must be more than 0 and at most \(Int(limit))") }
        return .milliseconds(Int64(number * 1000))
    }

    /// `["session", "admin", "entitlement:pro", "meter:chat.messages"]`.
    static func requirementList(_ value: JSONValue, _ key: String) throws(ManifestProblem) -> [Requirement] {
        guard case .array(let items) = value else { throw ManifestProblem("'\(key)' must be a list like [\"session\"]") }
        var out: [Requirement] = []
        for item in items {
            guard let text = item.stringValue else { throw ManifestProblem("'\(key)' must be a list of strings") }
            switch text {
            case "session": out.append(.session)
            case "onboarded": out.append(.onboarded)
            case "verifiedEmail": out.append(.verifiedEmail)
            case "idempotent": out.append(.idempotent)
            case "socket": out.append(.socket)
            case "clientRateLimited": out.append(.clientRateLimited)
            case "admin": out.append(.admin)
            case let t where t.hasPrefix("entitlement:") && t.count > 12: out.append(.entitlement(String(t.dropFirst(12))))
            case let t where t.hasPrefix("meter:") && t.count > 6: out.append(.meter(String(t.dropFirst(6))))
            default:
                throw ManifestProblem("'\(text)' in \(key) is not session, onboarded, verifiedEmail, idempotent, socket, clientRateLimited, admin, entitlement:NAME or meter:NAME")
            }
        }
        return out
    }

    /// The requirements of a method.
    public func requirements(of method: String) -> [Requirement] { requirements[method] ?? defaultRequirements }

    /// What the plugin's own connection to appd may do.
    var scope: PluginScope {
        PluginScope(plugin: name, publishes: publishes, subscribes: subscribes, calls: Set(calls), capabilities: Set(capabilities))
    }

    /// What the manifest asks appd for, for `appctl plugins`: the operator sees every grant
    /// before trusting a plugin (calls, capabilities, topics, environment, HTTP, network, read-only paths).
    public var grants: String {
        var parts: [String] = []
        func add(_ label: String, _ items: [String]) { if !items.isEmpty { parts.append(label + " " + items.sorted().joined(separator: ",")) } }
        add("calls", calls)
        add("capabilities", capabilities)
        add("publishes", publishes)
        add("subscribes", subscribes)
        add("environment", environment)
        add("http", Array(http))
        add("export", export.map { [$0] } ?? [])
        if sandbox.network { parts.append("network") }
        add("reads", sandbox.readOnlyPaths)
        return parts.isEmpty ? "none" : parts.joined(separator: "; ")
    }

    /// The topics its declared events own, for the bus.
    func topics() throws -> [TopicInfo] {
        try events.map { event in
            TopicInfo(
                topic: event.topic, version: event.version, schema: try EventSchema(parsing: event.type), audience: event.audience,
                durable: event.durable, publisher: name, external: true)
        }
    }
}

/// Why a manifest was refused.
public struct ManifestProblem: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension VarlinkInterface {
    /// appd's own interface names, which no external plugin may serve.
    static func isReserved(_ name: String) -> Bool {
        ["io.appd.Auth", "io.appd.Todos", "io.appd.Payments", "io.appd.Chat", "io.appd.Rating", "io.appd.Settings", "io.appd.Daemon", "io.appd.Bus"].contains(name)
            || name.hasPrefix("org.varlink.")
    }
}

/// One event type an external plugin declares under "events" in its plugin.json.
public struct DeclaredEvent: Sendable, Equatable {
    public var topic: String
    /// The payload type in varlink IDL syntax, e.g. `(noteId: string, userId: string)`.
    public var type: String
    public var audience: EventAudience
    public var durable: Bool
    public var version: Int

    static func parse(topic: String, _ value: JSONValue) throws(ManifestProblem) -> DeclaredEvent {
        do { try TopicFilter.validate(topic: topic) } catch { throw ManifestProblem("events: '\(topic)' is not a topic: \(error)") }
        guard let table = value.objectValue else { throw ManifestProblem("events.\(topic) must be an object with 'type' and 'audience'") }
        if let unknown = table.keys.sorted().first(where: { !["type", "audience", "durable", "version", "description"].contains($0) }) {
            throw ManifestProblem("events.\(topic): unknown key '\(unknown)' (type, audience, durable, version)")
        }
        guard let type = table["type"]?.stringValue else {
            throw ManifestProblem("events.\(topic).type is required: the payload type in varlink IDL, e.g. \"(noteId: string, userId: string)\"")
        }
        let schema: EventSchema
        do { schema = try EventSchema(parsing: type) } catch { throw ManifestProblem("events.\(topic).type: \(error.reason)") }
        guard let text = table["audience"]?.stringValue, let audience = EventAudience(parsing: text) else {
            throw ManifestProblem("events.\(topic).audience is owner, admin or capability:NAME")
        }
        if audience == .owner, case .structure(let fields) = schema.type, !fields.contains(where: { $0.name == "userId" && $0.type == .string }) {
            throw ManifestProblem("events.\(topic): an owner-audience event names its owner in a 'userId: string' field")
        }
        var event = DeclaredEvent(topic: topic, type: type, audience: audience, durable: true, version: 1)
        if let durable = table["durable"] {
            guard case .bool(let flag) = durable else { throw ManifestProblem("events.\(topic).durable must be true or false") }
            event.durable = flag
        }
        if let version = table["version"] {
            guard case .int(let n) = version, n >= 1, n <= 1_000_000 else { throw ManifestProblem("events.\(topic).version must be a positive integer") }
            event.version = Int(n)
        }
        return event
    }
}

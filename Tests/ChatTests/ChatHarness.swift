import Bus
import Crypto
import Glibc
import PluginKit
import Storage
import Testing
@testable import Auth
@testable import Chat
@testable import Payments

/// Auth, payments and chat wired as appd wires them.
struct Harness {
    let bus: EventBus
    let database: SQLiteDatabase
    let context: PluginContext
    let chat: ChatPlugin

    static func make(provider: (any LLMProvider)? = nil, freeMessages: Int = 10) async throws -> Harness {
        var template = Array("/tmp/appd-chat-XXXXXX".utf8CString)
        let dir = mkdtemp(&template).map { String(cString: $0) } ?? "/tmp"
        var authOptions = AuthService.Options()
        authOptions.scrypt = Scrypt.Parameters(logN: 10, r: 8, p: 1)
        let auth = try AuthPlugin(options: authOptions)
        var paymentOptions = PaymentsPlugin.Options()
        paymentOptions.catalog = PaymentsCatalog(meters: [.init(name: "chat.messages", limit: freeMessages, period: .day, entitlement: "pro")])
        let payments = PaymentsPlugin(options: paymentOptions)
        let chat = try ChatPlugin(provider: provider ?? EchoProvider(delay: .zero))
        let database = try SQLiteDatabase(path: dir + "/appd.db", bus: nil)
        try await Migrator.migrate(database, auth.migrations + payments.migrations + chat.migrations)
        let bus = EventBus(gates: GateOrder.sorted([AdminGate()] + auth.gates(database: database) + payments.gates(database: database)))
        database.attach(bus: bus)
        let context = PluginContext(
            bus: bus, database: database, eventLog: EventLog(database: database), logger: Logger(label: "t", handler: InMemoryLogHandler()))
        try await auth.start(context)
        try await payments.start(context)
        try await chat.start(context)
        return Harness(bus: bus, database: database, context: context, chat: chat)
    }

    /// A signed-in, onboarded user on a connection of its own.
    func user(_ email: String) async throws -> Caller {
        _ = try await bus.send(AuthInterface.SignUp(email: email, password: "password for \(email)", displayName: nil))
        let session = try await bus.send(AuthInterface.SignIn(email: email, password: "password for \(email)")).session
        let caller = Caller(peer: PeerCredentials(uid: 1000, gid: 1000, pid: 1), connection: ConnectionContext(id: Int.random(in: 1...1_000_000), peer: nil))
        _ = try await bus.send(AuthInterface.Authenticate(accessToken: session.accessToken), as: caller)
        _ = try await bus.send(AuthInterface.CompleteOnboarding(), as: caller)
        return caller
    }

    func conversation(_ caller: Caller, _ title: String? = nil) async throws -> Conversation {
        try await bus.send(ChatInterface.CreateConversation(title: title), as: caller).conversation
    }

    /// Sends and collects the whole stream: the deltas and the final message.
    func send(_ text: String, in conversation: String, as caller: Caller) async throws -> (deltas: [String], message: ChatMessage) {
        let stream = try await bus.stream(ChatInterface.Send(conversationId: conversation, text: text), as: caller)
        var deltas: [String] = []
        var final: ChatMessage?
        for try await reply in stream {
            if let delta = reply.delta { deltas.append(delta) }
            if let message = reply.message { final = message }
        }
        return (deltas, try #require(final))
    }

    func history(_ conversation: String, as caller: Caller) async throws -> [ChatMessage] {
        try await bus.send(ChatInterface.History(conversationId: conversation, cursor: nil, limit: 200), as: caller).messages
    }
}

/// Collects a provider's whole reply.
func collect(_ provider: any LLMProvider, _ text: String = "hi") async throws -> (text: String, usage: (Int, Int)?) {
    var out = ""
    var usage: (Int, Int)?
    for try await chunk in provider.reply(to: [ChatTurn(role: .user, text: text)]) {
        switch chunk {
        case .delta(let d): out += d
        case .usage(let p, let c): usage = (p, c)
        }
    }
    return (out, usage)
}

import Bus
import Console
import Contracts
import HTTP

/// Step 8c of the composition root: the operator console (`--console-listen`) and
/// io.appd.Console, which answers ConsoleOff while the console is off.
extension Appd {
    /// Binds the console's address (a bind failure stops appd) and builds its service; nil
    /// when `consoleListen` is not set. io.appd.Console is served either way.
    static func console(_ config: AppdConfig, dispatcher: VarlinkDispatcher, adminGate: AdminGate, trail: LogTrail, logger: Logger) throws -> ConsoleService? {
        var service: ConsoleService?
        if let listen = config.console.listen {
            let fd: Int32
            let address: HTTPListenAddress
            do {
                address = try HTTPListenAddress(listen)
                fd = try address.listen()
            } catch {
                throw StartFailure("consoleListen: \(error)", exitCode: 78)
            }
            if !address.isLoopback {
                logger.warning(
                    "the console listens on a non-loopback address; keep it on loopback, or put the TLS proxy in front and set consoleUrl to its https address",
                    metadata: ["address": "\(address)"])
            }
            let console = Console(options: config.console, dispatcher: dispatcher, trail: trail, logger: Logger(label: "appd.console"))
            do {
                service = try ConsoleService(console: console, host: address.host, listenFD: fd, limits: config.http.limits, logger: Logger(label: "appd.console"))
            } catch {
                throw StartFailure("cannot start the console: \(error)")
            }
        }
        do {
            try ConsoleInterface.install(on: dispatcher, service: service, adminGate: adminGate, options: config.console)
        } catch {
            throw StartFailure("cannot set up io.appd.Console: \(error)")
        }
        return service
    }
}

extension ConsoleInterface {
    static func install(on dispatcher: VarlinkDispatcher, service: ConsoleService?, adminGate: AdminGate, options: ConsoleOptions) throws {
        try dispatcher.register(try VarlinkInterface(parsing: idl))
        let bus = dispatcher.bus
        let sessions = service?.console.sessions
        let base = service.map { options.base(listeningOn: $0.address) }
        try bus.register(CreateLink.self) { _, envelope in
            guard let sessions, let base else { throw ConsoleError.consoleOff }
            // The admin gate let the caller through; the session acts with its credentials.
            guard let credentials = adminGate.consoleCredentials(of: envelope.caller) else {
                throw PermissionDenied(reason: "a console link is for an admin peer on the socket (the daemon's uid, root, or the admin group)")
            }
            let link = try sessions.createLink(for: credentials)
            envelope.logger.notice("console link created", metadata: ["peer.uid": "\(credentials.uid)"])
            return Link(url: base + "/console/login?token=" + link.token, expiresAt: link.expiresAt.rfc3339)
        }
        try bus.register(Sessions.self) { _, _ in
            guard let sessions else { throw ConsoleError.consoleOff }
            return SessionList(sessions: sessions.list())
        }
        try bus.register(EndSessions.self) { command, _ in
            guard let sessions else { throw ConsoleError.consoleOff }
            return Ended(ended: try sessions.end(id: command.id))
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Console
import Storage
import Contracts
import HTTP

/// Step 8c of the composition root: the operator console (`--console-listen`) and
/// io.appd.Console, which answers ConsoleOff while the console is off.
extension Appd {
    /// Binds the console's address (a bind failure stops appd) and builds its service; nil
    /// when `consoleListen` is not set. io.appd.Console is served either way.
    static func console(
        _ config: AppdConfig, dispatcher: VarlinkDispatcher, database: any Database, adminGate: AdminGate, trail: LogTrail, logger: Logger
    ) async throws -> ConsoleService? {
        var service: ConsoleService?
        if let listen = config.console.listen {
            let (address, fd) = try bind(
                listen, key: "consoleListen", backlog: config.listenBacklog, logger: logger,
                warning: "the console listens on a non-loopback address; keep it on loopback, or put the TLS proxy in front and set consoleUrl to its https address")
            // Links and sessions are in the database: any instance of the deployment serves them.
            let sessions: ConsoleSessions
            do {
                sessions = try await ConsoleSessions.open(options: config.console, database: database)
            } catch {
                throw StartFailure("cannot set up the console's sessions: \(error)")
            }
            let console = Console(options: config.console, sessions: sessions, dispatcher: dispatcher, trail: trail, logger: Logger(label: "appd.console"))
            do {
                service = try ConsoleService(console: console, host: address.host, listenFD: fd, limits: config.http.limits, logger: Logger(label: "appd.console"))
            } catch {
                throw StartFailure("cannot start the console: \(error)")
            }
        }
        do {
            try ConsoleInterface.install(
                on: dispatcher, console: service?.console, base: service.map { config.console.base(listeningOn: $0.address) }, adminGate: adminGate)
        } catch {
            throw StartFailure("cannot set up io.appd.Console: \(error)")
        }
        return service
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import Serving

/// A Swift external plugin's whole varlink side in one call: serves its interfaces, with the
/// typed handlers it declares, on the socket appd hands the process (fd 3, `LISTEN_FDS`),
/// until appd stops it (SIGTERM drains the calls in flight).
///
/// ```swift
/// @main struct Notes {
///     static func main() async {
///         await ExternalPluginServer.serve(product: "notes", version: "1.0.0", interfaces: [NotesInterface.idl]) { handlers in
///             handlers.handle(NotesInterface.Add.self) { command, envelope in .init(id: try await store.add(command.text)) }
///         }
///     }
/// }
/// ```
///
/// The handlers are checked against the interfaces before anything is served, as appd checks
/// a built-in plugin's: an IDL method without a handler, or a handler the IDL does not
/// declare, stops the process with the method named (appd shows it in `appctl plugins`).
public enum ExternalPluginServer {
    /// Serves until appd stops the process, then exits: 0 after a clean stop, 1 when serving
    /// failed, 2 when the process was not started by appd (no socket on fd 3).
    public static func serve(
        product: String, version: String, vendor: String = "appd plugin", url: String = "",
        interfaces: [String], limits: ServerLimits = ServerLimits(), logLevel: LogLevel = .info,
        handlers declare: @Sendable (HandlerSet) throws -> Void
    ) async -> Never {
        LoggingSystem.bootstrap(level: logLevel) { _ in StreamLogHandler.standardError() }
        let logger = Logger(label: product)
        guard let fd = Systemd.takeListeningSocket() else {
            logger.critical("no socket on fd 3: appd starts this program from a plugin folder with its plugin.json")
            exit(2)
        }
        do {
            try await serve(
                listener: .inherited(fd: fd, path: "fd:\(fd)"), info: .init(vendor: vendor, product: product, version: version, url: url),
                interfaces: interfaces, limits: limits, logger: logger, handlers: declare)
            exit(0)
        } catch {
            logger.critical("\(product) stopped: \(error)")
            exit(1)
        }
    }

    /// Serves on `listener` until a graceful shutdown (SIGTERM, SIGINT); throws when the
    /// interfaces do not parse, the handlers do not match them, or the server fails.
    public static func serve(
        listener: ListeningSocket, info: VarlinkServiceInterface.Info, interfaces: [String], limits: ServerLimits = ServerLimits(),
        logger: Logger, handlers declare: @Sendable (HandlerSet) throws -> Void
    ) async throws {
        let parsed = try interfaces.map { try VarlinkInterface(parsing: $0) }
        let handlers = HandlerSet()
        try declare(handlers)
        let bus = CommandBus()
        let dispatcher = try VarlinkDispatcher(bus: bus, info: info, logger: logger)
        try handlers.activate(on: bus, interfaces: parsed, plugin: info.product)
        for interface in parsed { try dispatcher.register(interface) }
        let server = try VarlinkServer(listener: listener, dispatcher: dispatcher, limits: limits, logger: logger)
        logger.notice("serving", metadata: ["interfaces": "\(parsed.map(\.name).joined(separator: ", "))"])
        try await ServiceGroup(services: [server], logger: logger).run()
    }
}

// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import BusCore
import Contracts
import Varlink

/// One appctl run: the global options, the output style, and the connection to appd
/// (opened on first use, so `--help` never needs the daemon).
final class Context {
    let options: GlobalOptions
    let output: Output
    private var client: VarlinkClient?
    private var interfaceCache: [String: VarlinkInterface] = [:]

    init(options: GlobalOptions) {
        self.options = options
        self.output = Output(json: options.json)
    }

    func connect() throws(AppctlError) -> VarlinkClient {
        if let client { return client }
        let path = options.socketPath
        let client: VarlinkClient
        do throws(VarlinkClientError) {
            client = try VarlinkClient(path: path, timeout: options.timeout)
        } catch {
            throw .unreachable(error, socket: path)
        }
        // Before the first byte: another local user's listener on this path must not get a
        // session token or a password.
        // Trusted: a daemon running as us or root, one we were told to expect, or whoever
        // listens on a socket in a directory only root or we control (a systemd-run appd under
        // its own user, on /run/appd/appd.sock).
        let uid = client.server?.uid
        let absolute = path.hasPrefix("/") ? path : (FileSystem.currentDirectory() ?? "") + "/" + path
        guard let uid, uid == getuid() || uid == 0 || uid == options.expectUID || FileSystem.isTrusted(directory: FileSystem.parent(of: absolute)) else {
            throw .untrustedServer(uid: uid, socket: path)
        }
        self.client = client
        try attachSession(client)
        return client
    }

    /// Authenticates the connection with the saved session, refreshing it once when the access
    /// token has expired. Without a usable session the call goes out unauthenticated, and a
    /// method that needs one answers Unauthenticated (reported with "run appctl login").
    private func attachSession(_ client: VarlinkClient) throws(AppctlError) {
        let store = SessionStore.standard()
        let socket = options.socketPath
        guard let saved = store.session(for: socket) else { return }
        do throws(VarlinkClientError) {
            let reply = try client.call(AuthInterface.Authenticate.method, ["accessToken": .string(saved.accessToken)])
            guard let error = reply.error, ContractErrors.typed(name: error, parameters: reply.parameters.objectValue ?? [:]) as? AuthError == .sessionExpired
            else { return }
            let refreshed = try client.call(AuthInterface.Refresh.method, ["refreshToken": .string(saved.refreshToken)])
            guard refreshed.error == nil, let session = try? refreshed.parameters.decode(as: AuthInterface.SessionReply.self).session else { return }
            try? store.save(.init(accessToken: session.accessToken, refreshToken: session.refreshToken, email: saved.email), for: socket)
            _ = try client.call(AuthInterface.Authenticate.method, ["accessToken": .string(session.accessToken)])
        } catch {
            throw .unreachable(error, socket: socket)
        }
    }

    /// One typed call (`VarlinkClient.call(_:errors:)`): the reply as its type; an error reply
    /// becomes `AppctlError.daemon` again, for the sentence and the exit code.
    func call<C: Command>(_ command: C) throws(AppctlError) -> C.Reply {
        let client = try connect()
        do {
            return try client.call(command, errors: .contracts)
        } catch let error as VarlinkClientError {
            throw .unreachable(error, socket: options.socketPath)
        } catch let error as VarlinkErrorReply {
            throw .daemon(VarlinkReply(parameters: error.parameters, error: error.name))
        } catch let error as any WireError {
            throw .daemon(VarlinkReply(error: error))
        } catch {
            throw .usage("cannot encode the call: \(error)", command: nil)
        }
    }

    /// One typed call whose reply is shown as it came (as JSON, or as a table of its fields).
    func json<C: Command>(_ command: C) throws(AppctlError) -> JSONValue {
        try call(C.method, try parameters(of: command))
    }

    /// A typed `more` call; `onReply` sees each reply as it came, until the stream ends.
    func stream<C: StreamingCommand>(_ command: C, onReply: (JSONValue, Bool) -> Void) throws(AppctlError) {
        try stream(C.method, try parameters(of: command), onReply: onReply)
    }

    private func parameters(of command: some Encodable) throws(AppctlError) -> JSONValue {
        do {
            return try JSONValue(encoding: command)
        } catch {
            throw .usage("cannot encode the call: \(error)", command: nil)
        }
    }

    /// One call; an error reply becomes `AppctlError.daemon`.
    func call(_ method: String, _ parameters: JSONValue = [:]) throws(AppctlError) -> JSONValue {
        let client = try connect()
        let reply: VarlinkReply
        do throws(VarlinkClientError) {
            reply = try client.call(method, parameters)
        } catch {
            throw .unreachable(error, socket: options.socketPath)
        }
        if reply.error != nil { throw .daemon(reply) }
        return reply.parameters
    }

    /// A `more` call; `onReply` sees each reply's parameters until the stream ends.
    func stream(_ method: String, _ parameters: JSONValue, onReply: (JSONValue, Bool) -> Void) throws(AppctlError) {
        let client = try connect()
        client.timeout = .seconds(365 * 24 * 3600)  // streams may idle for a long time
        do {
            try client.send(VarlinkCall(method: method, parameters: parameters, more: true))
            while true {
                let reply = try client.receive()
                if reply.error != nil { throw AppctlError.daemon(reply) }
                onReply(reply.parameters, reply.continues)
                if !reply.continues { return }
            }
        } catch let error as AppctlError {
            throw error
        } catch let error as VarlinkClientError {
            throw .unreachable(error, socket: options.socketPath)
        } catch {
            throw .unreachable(.closed, socket: options.socketPath)
        }
    }

    /// The names of the interfaces the daemon serves.
    func interfaceNames() throws(AppctlError) -> [String] {
        try call(VarlinkServiceInterface.GetInfo()).interfaces
    }

    /// A served interface, parsed from its IDL.
    func interface(_ name: String) throws(AppctlError) -> VarlinkInterface {
        if let cached = interfaceCache[name] { return cached }
        let text = try call(VarlinkServiceInterface.GetInterfaceDescription(interface: name)).description
        do throws(VarlinkIDLError) {
            let interface = try VarlinkInterface(parsing: text)
            interfaceCache[name] = interface
            return interface
        } catch {
            throw .usage("the daemon's description of \(name) does not parse: \(error)", command: nil)
        }
    }
}

/// Whether standard input is a terminal.
func stdinIsTerminal() -> Bool { isatty(0) == 1 }

/// All of standard input as bytes.
func readStandardInput() -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n > 0 { bytes.append(contentsOf: chunk[0..<n]) } else if n < 0 && errno == EINTR { continue } else { break }
    }
    return bytes
}

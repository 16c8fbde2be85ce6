// SPDX-License-Identifier: Apache-2.0
import BusCore
import Varlink

/// What ends an appctl run early; each case knows its message and exit code.
enum AppctlError: Error {
    /// The command line is wrong; `command` selects the usage line shown.
    case usage(String, command: String?)
    /// The daemon is not reachable.
    case unreachable(VarlinkClientError, socket: String)
    /// The daemon answered with an error reply.
    case daemon(VarlinkReply)
    /// The process on the socket runs as a uid appctl does not trust; nothing was sent to it.
    case untrustedServer(uid: UInt32?, socket: String)

    var exitCode: Int32 {
        switch self {
        case .usage: ExitCode.usage
        case .unreachable, .untrustedServer: ExitCode.unreachable
        case .daemon(let reply): ExitCode.forError(reply)
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Contracts

struct Status: SimpleCall {
    static let path = ["status"]
    static let abstract = "Show what the daemon is doing: version, uptime, connections, plugins, bus."
    static let method = DaemonInterface.Status.method
    static let order = ["version", "pid", "uptime", "connections", "plugins", "bus", "eventLog", "paths"]
}

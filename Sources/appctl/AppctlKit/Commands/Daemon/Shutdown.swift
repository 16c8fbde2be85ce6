// SPDX-License-Identifier: Apache-2.0
import Contracts

struct Shutdown: SimpleCall {
    static let path = ["shutdown"]
    static let abstract = "Stop the daemon gracefully (admin)."
    static let discussion = "In-flight calls finish first; appd then exits 0. Needs the daemon's uid, root or the admin group."
    static let method = DaemonInterface.Shutdown.method
    static let message: String? = "appd is shutting down"
}

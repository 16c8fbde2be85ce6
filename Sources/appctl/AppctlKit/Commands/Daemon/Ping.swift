// SPDX-License-Identifier: Apache-2.0
import Contracts

struct Ping: SimpleCall {
    static let path = ["ping"]
    static let abstract = "Check that appd is running and answering."
    static let discussion = "Prints 'pong' and exits 0 when the daemon answers; exits 2 when it cannot be reached."
    static let method = DaemonInterface.Ping.method
    static let message: String? = "pong"
}

// SPDX-License-Identifier: Apache-2.0
import Contracts

struct WhoAmI: SimpleCall {
    static let path = ["whoami"]
    static let abstract = "Show the signed-in account."
    static let method = AuthInterface.WhoAmI.method
}

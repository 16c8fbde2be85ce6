// SPDX-License-Identifier: Apache-2.0
import BusCore

struct Info: SimpleCall {
    static let path = ["info"]
    static let abstract = "Show the daemon's vendor, version and interfaces (org.varlink.service.GetInfo)."
    static let method = VarlinkServiceInterface.GetInfo.method
    static let order = ["vendor", "product", "version", "url", "interfaces"]
}

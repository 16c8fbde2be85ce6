// SPDX-License-Identifier: Apache-2.0
import BusCore

// `Ping` reads itself from the call's JSON object (`JSONObjectReadable`: nothing to read), held
// to its `Decodable` conformance by `JSONObjectReadableTests`.

extension DaemonInterface.Ping: JSONObjectReadable {
    public init(reading object: JSONObjectReader) throws { self.init() }
}

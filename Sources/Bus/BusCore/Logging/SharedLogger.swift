// SPDX-License-Identifier: Apache-2.0
/// A logger kept by reference: the bus's, which every envelope it makes starts from. Copying a
/// `Logger` copies its parts (its metadata and its handler, a reference each); an envelope made
/// per call holds this instead, one reference (`Envelope.logger` builds the call's logger from it).
package final class SharedLogger: Sendable {
    package let logger: Logger
    package init(_ logger: Logger) { self.logger = logger }
}

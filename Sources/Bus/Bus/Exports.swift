// SPDX-License-Identifier: Apache-2.0
// `import Bus` gives a plugin the whole bus API: the portable core it is written in, the
// varlink wire, and the runtime its services run on (as SwiftNIO's NIO re-exports NIOCore).
// Clients that need only the core and the wire (appctl) import BusCore and Varlink instead.
@_exported import BusCore
@_exported import Runtime
@_exported import Varlink

// SPDX-License-Identifier: Apache-2.0
// `import Bus` gives a plugin the whole bus API: commands, gates and the varlink server
// (Serving, which re-exports the portable core, the wire and the runtime), and events (as
// SwiftNIO's NIO re-exports NIOCore). Clients that need only the core and the wire (appctl)
// import BusCore and Varlink instead; an external plugin's process imports PluginSDK.
@_exported import Serving

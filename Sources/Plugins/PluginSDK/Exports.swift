// SPDX-License-Identifier: Apache-2.0
// `import PluginSDK` is all an external Swift plugin imports: typed commands and their
// handlers, the varlink server it serves them on, and the client it calls appd with. None of
// appd's server (events, storage, gates that need accounts) is linked into a plugin's process.
@_exported import Serving

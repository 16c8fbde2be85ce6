// SPDX-License-Identifier: Apache-2.0
import Bus

/// Stands in for a built-in plugin that could not be constructed (say, chat with a base URL
/// it refuses): the host lists it as failed with the reason, skips the plugins that depend on
/// it with theirs, and starts everything else. One plugin's bad configuration never hides or
/// takes down another.
public struct UnavailablePlugin: Plugin {
    public let manifest: PluginManifest
    public let error: any Error

    public init(name: String, error: any Error) {
        self.manifest = PluginManifest(name: name, version: "-")
        self.error = error
    }

    public func start(_ context: PluginContext) async throws {
        throw PluginConstructionFailed(plugin: manifest.name, underlying: error)
    }

    /// Builds one plugin; a construction that throws yields an `UnavailablePlugin` named `name`.
    public static func build(_ name: String, _ construct: () throws -> any Plugin) -> any Plugin {
        do {
            return try construct()
        } catch {
            return UnavailablePlugin(name: name, error: error)
        }
    }
}

/// Why an `UnavailablePlugin` did not start.
public struct PluginConstructionFailed: Error, CustomStringConvertible {
    public let plugin: String
    public let underlying: any Error
    public var description: String { "could not be set up: \(underlying); fix its configuration and restart appd" }
}

// SPDX-License-Identifier: Apache-2.0
import Bus

/// Stands in for a service a plugin could not build (say, a consumer whose filter was
/// refused): it fails every run, so the host reports the plugin degraded with the reason and
/// keeps retrying with backoff, instead of the work silently never happening.
public struct FailedService: Service {
    public let name: String
    public let error: any Error

    public init(name: String, error: any Error) {
        self.name = name
        self.error = error
    }

    public func run() async throws { throw error }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
/// A long-running piece of the daemon (socket server, plugin worker) in swift-service-lifecycle's
/// shape: `run` returns when the service is done and ends promptly when its task is cancelled.
public protocol Service: Sendable {
    var name: String { get }
    func run() async throws
}

/// Why a `ServiceGroup` stopped, when the reason is not a clean shutdown.
public struct ServiceFailed: Error, CustomStringConvertible {
    public let service: String
    public let underlying: any Error
    public var description: String { "service \(service) failed: \(underlying)" }
}

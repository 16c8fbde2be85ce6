// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A socket operation failed; says which, on what path, and why.
public struct SocketError: Error, Equatable, CustomStringConvertible {
    public let operation: String
    public let path: String
    public let code: Int32
    public var message: String?

    public init(operation: String, path: String, code: Int32, message: String? = nil) {
        self.operation = operation
        self.path = path
        self.code = code
        self.message = message
    }

    public var description: String {
        if let message { return message }
        return "\(operation) \(path): \(String(cString: strerror(code)))"
    }
}

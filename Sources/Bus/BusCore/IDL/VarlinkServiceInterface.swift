// SPDX-License-Identifier: Apache-2.0
/// The `org.varlink.service` interface every varlink service provides, and its errors.
public enum VarlinkServiceInterface {
    public static let name = "org.varlink.service"

    public static let idl = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        # category: notFound
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        # category: notFound
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        # category: notImplemented
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        # category: invalid
        error InvalidParameter (parameter: string)

        # Client is denied access
        # category: forbidden
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        # category: invalid
        error ExpectedMore ()

        """

    /// The service's vendor, version and interfaces.
    public struct GetInfo: Command {
        public static let method = "org.varlink.service.GetInfo"
        public struct Reply: Codable, Sendable {
            public var vendor: String
            public var product: String
            public var version: String
            public var url: String
            public var interfaces: [String]
        }
        public init() {}
    }

    /// One served interface's definition (IDL text).
    public struct GetInterfaceDescription: Command {
        public static let method = "org.varlink.service.GetInterfaceDescription"
        public struct Reply: Codable, Sendable {
            public var description: String
        }
        public var interface: String
        public init(interface: String) { self.interface = interface }
    }

    /// What `GetInfo` reports about the service.
    public struct Info: Sendable, Codable, Hashable {
        public var vendor: String
        public var product: String
        public var version: String
        public var url: String

        public init(vendor: String, product: String, version: String, url: String) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
        }
    }
}

/// `org.varlink.service.InterfaceNotFound`
public struct InterfaceNotFound: WireError, Equatable {
    public let interface: String
    public init(interface: String) { self.interface = interface }
    public var wireName: String { "org.varlink.service.InterfaceNotFound" }
    public var wireParameters: [String: JSONValue] { ["interface": .string(interface)] }
    public var description: String { "interface \(interface) is not served here; `appctl info` lists the interfaces" }
}

/// `org.varlink.service.MethodNotFound`
public struct MethodNotFound: WireError, Equatable {
    public let method: String
    public init(method: String) { self.method = method }
    public var wireName: String { "org.varlink.service.MethodNotFound" }
    public var wireParameters: [String: JSONValue] { ["method": .string(method)] }
    public var description: String { "method \(method) does not exist; `appctl introspect` shows the methods" }
}

/// `org.varlink.service.PermissionDenied`
public struct PermissionDenied: WireError, Equatable {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var wireName: String { "org.varlink.service.PermissionDenied" }
    public var description: String { "permission denied: \(reason)" }
}

/// An unexpected failure inside appd; the message id finds the log line with the details.
public struct InternalError: WireError, Equatable {
    public let messageID: String
    public init(messageID: String) { self.messageID = messageID }
    public static let name = "io.appd.Bus.InternalError"
    public var wireName: String { Self.name }
    public var wireParameters: [String: JSONValue] { ["messageId": .string(messageID)] }
    public var description: String { "internal error in appd; see its log for message \(messageID)" }
}

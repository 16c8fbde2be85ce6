// SPDX-License-Identifier: Apache-2.0
/// What a path served beside the API needs a browser on an allowed origin to be let do, beyond
/// what every call needs: methods, request headers, and response headers it may read (tus
/// uploads: `PATCH`, `Upload-Offset`, `Location`, …). The CORS policy adds them.
public struct CrossOriginNeeds: Sendable, Equatable {
    public var methods: [String]
    public var requestHeaders: [String]
    public var exposedHeaders: [String]

    public init(methods: [String] = [], requestHeaders: [String] = [], exposedHeaders: [String] = []) {
        self.methods = methods
        self.requestHeaders = requestHeaders
        self.exposedHeaders = exposedHeaders
    }

    /// Both, each name once, in the order first seen.
    public func adding(_ other: CrossOriginNeeds) -> CrossOriginNeeds {
        func union(_ a: [String], _ b: [String]) -> [String] { a + b.filter { name in !a.contains { $0.lowercased() == name.lowercased() } } }
        return CrossOriginNeeds(
            methods: union(methods, other.methods), requestHeaders: union(requestHeaders, other.requestHeaders), exposedHeaders: union(exposedHeaders, other.exposedHeaders))
    }
}

// SPDX-License-Identifier: Apache-2.0
import BusCore
import HTTP

/// A path a plugin serves on the app-facing HTTP server (a provider's webhook, say): an exact
/// path, or every path under a prefix ending in "/". The most specific route wins: an exact
/// path before a prefix, a longer prefix before a shorter one.
public struct PluginHTTPRoute: Sendable {
    public enum Match: Sendable, Equatable {
        case exact(String)
        case prefix(String)
    }

    public let match: Match
    public let handler: HTTPServer.Handler
    /// A body larger than the server's `maxBodyBytes` this route takes (a `.prefix` route's
    /// uploads), up to this; nil: the server's bound.
    public let maxBodyBytes: Int?
    /// What the route serves for apps, as OpenAPI 3.1 path items by path (`/files/{id}`): they
    /// join appd's `/openapi.json`. A provider's webhook leaves it empty.
    public let openAPI: [String: JSONValue]
    /// What a browser on an allowed origin (`httpAllowedOrigins`) needs beyond a call's
    /// methods and headers to use the route.
    public let crossOrigin: CrossOriginNeeds

    public init(
        _ match: Match, maxBodyBytes: Int? = nil, openAPI: [String: JSONValue] = [:], crossOrigin: CrossOriginNeeds = CrossOriginNeeds(),
        handler: @escaping HTTPServer.Handler
    ) {
        self.match = match
        self.maxBodyBytes = maxBodyBytes
        self.openAPI = openAPI
        self.crossOrigin = crossOrigin
        self.handler = handler
    }

    /// The route for `path` among `routes`, if any.
    public static func resolve(_ path: String, in routes: [PluginHTTPRoute]) -> PluginHTTPRoute? {
        if let exact = routes.first(where: { $0.match == .exact(path) }) { return exact }
        return routes.compactMap { route -> (Int, PluginHTTPRoute)? in
            guard case .prefix(let prefix) = route.match, path.hasPrefix(prefix) else { return nil }
            return (prefix.count, route)
        }.max { $0.0 < $1.0 }?.1
    }
}

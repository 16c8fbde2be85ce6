// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// The methods the HTTP API routes, each decided once from what it declares (see
/// `HTTPAPI.routed`) and kept while its `VarlinkRoute` is current: a request pays one lookup
/// by name for whether it is routed, whether its reply may carry an entity tag, and whether it
/// is rate limited. Only routed methods are kept, so the table is bounded by the served IDL.
final class HTTPRoutes: Sendable {
    /// A method reachable over HTTP.
    struct Route: Sendable {
        let route: VarlinkRoute
        let info: MethodInfo
        /// Its reply may hold a versioned item (`ConditionalRequest.mayTag`).
        let taggable: Bool
        /// It takes from the per-address rate limit (`HTTPAPIOptions.rateLimitedMethods`).
        let rateLimited: Bool
    }

    private let known = Mutex<[String: Route]>([:])

    /// The route of `method`, resolved by `resolve` when not known or no longer current.
    func route(_ method: String, dispatcher: VarlinkDispatcher, resolve: (VarlinkRoute) -> Route?) -> Route? {
        if let hit = known.withLock({ $0[method] }), dispatcher.isCurrent(hit.route) { return hit }
        guard let route = dispatcher.route(method), let made = resolve(route) else {
            _ = known.withLock { $0.removeValue(forKey: method) }
            return nil
        }
        known.withLock { $0[method] = made }
        return made
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus
import Synchronization

/// The methods the HTTP API routes, each decided once from what it declares (see
/// `HTTPAPI.routed`) and kept while its `VarlinkRoute` is current: a request pays one lookup
/// by its path for whether it is routed, whether its reply may carry an entity tag, and whether
/// it is rate limited. Only routed methods are kept, by name and by the paths that named them
/// (a few per method at most: `/v1/a.b/C` and `/v1/a/b.C` both name `a.b.C`), so the tables are
/// bounded by the served IDL.
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
    /// The same routes by the request path that names them (`/v1/<interface>/<Method>`), so a
    /// call's method name is not built from its path each time.
    private let byPath = Mutex<[String: Route]>([:])

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

    /// The route the request path `path` names (`method` turns it into the method's name, or
    /// "" when it names none), as `route(_:dispatcher:resolve:)` finds it.
    func route(path: String, method: (String) -> String, dispatcher: VarlinkDispatcher, resolve: (VarlinkRoute) -> Route?) -> Route? {
        if let hit = byPath.withLock({ $0[path] }), dispatcher.isCurrent(hit.route) { return hit }
        let name = method(path)
        guard !name.isEmpty, let made = route(name, dispatcher: dispatcher, resolve: resolve) else {
            _ = byPath.withLock { $0.removeValue(forKey: path) }
            return nil
        }
        byPath.withLock { $0[path] = made }
        return made
    }
}

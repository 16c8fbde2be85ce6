// SPDX-License-Identifier: Apache-2.0
import Bus
import HTTP

/// The client's address: the peer's, or — when the peer is a trusted proxy — the nearest
/// address in `X-Forwarded-For` that is not itself a trusted proxy.
enum ClientAddress {
    static func of(_ request: HTTPServerRequest, trustedProxies: Set<String>) -> String {
        guard trustedProxies.contains(request.peerAddress), let forwarded = request.headers["x-forwarded-for"] else { return request.peerAddress }
        let hops = forwarded.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        return hops.last { !trustedProxies.contains($0) } ?? request.peerAddress
    }
}

// SPDX-License-Identifier: Apache-2.0
import Bus

/// The two refusals the HTTP API makes itself, before a call reaches the bus, as the errors of
/// the feature that issues sessions (the composition root passes them: the API names no
/// feature): an `Authorization` header that is not a bearer token, and a client address over
/// the limit of the methods that declare `clientRateLimited`. Each is answered with the status
/// its interface declares for it (`ErrorCategory`), like any error from the bus.
public struct HTTPRefusals: Sendable {
    /// An `Authorization` header that is not `Bearer <token>`.
    public var notBearer: any WireError
    /// A client address over the limit; the seconds to wait go with it.
    public var clientRateLimited: @Sendable (_ retryAfterSeconds: Int) -> any WireError

    public init(notBearer: any WireError, clientRateLimited: @escaping @Sendable (_ retryAfterSeconds: Int) -> any WireError) {
        self.notBearer = notBearer
        self.clientRateLimited = clientRateLimited
    }
}

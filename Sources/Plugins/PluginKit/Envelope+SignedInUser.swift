// SPDX-License-Identifier: Apache-2.0
import Bus

extension Envelope {
    /// The signed-in user the session gate established, or `error` (a method that needs
    /// `.session` always has one: the gates ran before its handler).
    public func signedInUser<E: Error>(or error: @autoclosure () -> E) throws(E) -> String {
        guard let principal = caller.principal else { throw error() }
        return principal.userID
    }
}

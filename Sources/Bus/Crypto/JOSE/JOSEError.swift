// SPDX-License-Identifier: Apache-2.0
import BusCore
/// Why a JWS, JWT or JWK was refused. Never carries key material or a whole token.
public enum JOSEError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not three base64url parts, not JSON objects, too large, a `crit` header: `reason` says which.
    case malformed(String)
    /// The header names an algorithm that is not accepted (`none`, HMAC, or one the key does not name).
    case algorithm(String)
    /// No key in the set has the header's key id.
    case unknownKey(String?)
    /// The signature does not verify with the key.
    case signature

    public var description: String {
        switch self {
        case .malformed(let reason): "malformed: \(reason)"
        case .algorithm(let name): "algorithm \(name) is not accepted"
        case .unknownKey(let id): "no published key has id \(id.map { "'\($0)'" } ?? "(none given)")"
        case .signature: "the signature does not verify"
        }
    }
}

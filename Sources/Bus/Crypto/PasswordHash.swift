// SPDX-License-Identifier: Apache-2.0
import BusCore
/// An scrypt password hash as a PHC string: `$scrypt$ln=17,r=8,p=1$<salt>$<hash>` (base64
/// without padding), so parameters can be raised later and old hashes still verify.
public struct PasswordHash: Sendable, Equatable {
    public let parameters: Scrypt.Parameters
    public let salt: [UInt8]
    public let hash: [UInt8]

    public init(parameters: Scrypt.Parameters, salt: [UInt8], hash: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    /// Parses a PHC string; nil when it is not one this code wrote (or could have).
    public init?(phc: String) {
        let parts = phc.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt" else { return nil }
        var values: [String: Int] = [:]
        for pair in parts[2].split(separator: ",") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, let value = Int(kv[1]), values[String(kv[0])] == nil else { return nil }
            values[String(kv[0])] = value
        }
        guard values.count == 3, let logN = values["ln"], let r = values["r"], let p = values["p"],
            (1...22).contains(logN), (1...32).contains(r), (1...16).contains(p),
            let salt = Base64.decode(String(parts[3])), (8...64).contains(salt.count),
            let hash = Base64.decode(String(parts[4])), (16...64).contains(hash.count)
        else { return nil }
        self.init(parameters: Scrypt.Parameters(logN: logN, r: r, p: p), salt: salt, hash: hash)
    }

    public var phc: String {
        "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Base64.encode(salt))$\(Base64.encode(hash))"
    }
}

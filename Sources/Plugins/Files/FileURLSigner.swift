// SPDX-License-Identifier: Apache-2.0
import BusCore
import Crypto
import Synchronization

/// Signed download URLs: `/files/<id>?expires=<unix seconds>&sig=<HMAC-SHA256>`, the MAC over
/// the purpose, the file and the expiry, so a URL opens one file, for downloading, until it
/// expires — and nothing else, however its parts are rearranged.
struct FileURLSigner: Sendable {
    let key: [UInt8]
    static let purpose = "appd.files.download.v1"

    func path(for id: String, expires: Int64) -> String {
        "/files/\(id)?expires=\(expires)&sig=\(signature(id: id, expires: expires))"
    }

    /// Whether `sig` is this file's signature for `expires`, and `expires` is after `now`.
    func verify(id: String, expires: Int64, sig: String, now: Int64) -> Bool {
        guard expires > now else { return false }
        return Digest.constantTimeEqual(Array(signature(id: id, expires: expires).utf8), Array(sig.utf8))
    }

    private func signature(id: String, expires: Int64) -> String {
        String(Base64.encode(Digest.hmacSHA256(key: key, data: Array("\(Self.purpose)\n\(id)\n\(expires)".utf8)), urlSafe: true).prefix { $0 != "=" })
    }
}

/// The running plugin's signer, set once it starts.
final class SignerBox: Sendable {
    private let value = Mutex<FileURLSigner?>(nil)
    var signer: FileURLSigner? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

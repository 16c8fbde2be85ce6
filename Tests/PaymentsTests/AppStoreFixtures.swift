// SPDX-License-Identifier: Apache-2.0
import Bus
import Glibc
import Crypto
import Synchronization
import TestSupport
@testable import Payments

/// A signing chain (PEM) and its leaf's key, as the App Store's payloads carry it.
struct Chain {
    let leaf: String
    let intermediate: String
    let root: String
    let key: String

    static func der(_ pem: String) -> [UInt8] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Base64.decode(body) ?? []
    }

    /// The `x5c` header as the App Store sends it: leaf, intermediate, root, standard base64 DER.
    var x5c: JSONValue { .array([leaf, intermediate, root].map { .string(Base64.encode(Self.der($0))) }) }

    /// `claims` signed ES256 by this chain's leaf key, with `header` added to the JWS header.
    func sign(_ claims: JSONValue, header: [String: JSONValue] = [:]) throws -> String {
        var full: [String: JSONValue] = ["x5c": x5c]
        for (k, v) in header { full[k] = v }
        return try CompactJWS.signES256(header: full, claims: claims, key: try P256PrivateKey(pem: key))
    }
}

/// App Store payloads for the tests: transactions and notifications as Apple shapes them.
enum AppStorePayloads {
    static let bundle = "com.example.app"

    static func transaction(
        id: String, original: String, product: String = "pro_monthly", type: String = "Auto-Renewable Subscription", purchasedMillis: Int64,
        expiresMillis: Int64? = nil, signedMillis: Int64, token: String? = nil, revokedMillis: Int64? = nil, bundle: String = bundle,
        environment: String = "Production"
    ) -> JSONValue {
        var claims: [String: JSONValue] = [
            "transactionId": .string(id), "originalTransactionId": .string(original), "bundleId": .string(bundle), "productId": .string(product),
            "purchaseDate": .int(purchasedMillis), "originalPurchaseDate": .int(purchasedMillis), "quantity": 1, "type": .string(type),
            "inAppOwnershipType": "PURCHASED", "signedDate": .int(signedMillis), "environment": .string(environment), "storefront": "USA",
            "transactionReason": "PURCHASE",
        ]
        if let expiresMillis { claims["expiresDate"] = .int(expiresMillis) }
        if let token { claims["appAccountToken"] = .string(token) }
        if let revokedMillis {
            claims["revocationDate"] = .int(revokedMillis)
            claims["revocationReason"] = 0
        }
        return .object(claims)
    }

    /// A notification's body (`{"signedPayload": …}`) carrying `transaction` (a JWS).
    static func notification(
        _ uuid: String, type: String, subtype: String? = nil, signedMillis: Int64, transaction: String?, renewal: String? = nil,
        chain: Chain = AppStoreChains.good, bundle: String = bundle, environment: String = "Production"
    ) throws -> String {
        var data: [String: JSONValue] = ["bundleId": .string(bundle), "environment": .string(environment), "appAppleId": 1_234_567_890, "status": 1]
        if let transaction { data["signedTransactionInfo"] = .string(transaction) }
        if let renewal { data["signedRenewalInfo"] = .string(renewal) }
        var payload: [String: JSONValue] = [
            "notificationType": .string(type), "notificationUUID": .string(uuid), "data": .object(data), "version": "2.0",
            "signedDate": .int(signedMillis),
        ]
        if let subtype { payload["subtype"] = .string(subtype) }
        let signed = try chain.sign(.object(payload))
        return String(decoding: JSONWriter.bytes(["signedPayload": .string(signed)]), as: UTF8.self)
    }

    /// The trusted root in a file, as an operator installs it (one per test process).
    static func rootFile() throws -> String {
        guard let path = writtenRoot else { throw CryptoError("cannot write the test root certificate") }
        return path
    }

    private static let writtenRoot: String? = {
        var template = Array("/tmp/appd-appstore-root-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let bytes = Array(AppStoreChains.trustedRoot.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { return nil }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Shared by the process's tests: removed when it exits.
        rootPathForExit.withLock { $0 = path }
        atexit { _ = rootPathForExit.withLock { $0.map { unlink($0) } } }
        return path
    }()
}

/// The test root certificate's file, for the exit handler to remove.
private let rootPathForExit = Mutex<String?>(nil)

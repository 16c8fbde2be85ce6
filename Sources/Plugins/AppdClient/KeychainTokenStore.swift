// SPDX-License-Identifier: Apache-2.0
#if canImport(Security)
import BusCore
import Contracts
import Foundation
import Security

/// Keeps the session in the Keychain, as the templates require ("tokens in Keychain, never
/// UserDefaults"): one generic-password item (`service`, `account`), readable after the first
/// unlock (`kSecAttrAccessibleAfterFirstUnlock`: background refreshes work), shared with app
/// extensions through `accessGroup` when given. An item that cannot be read or parsed is no
/// session (`signedOut`) and is deleted.
public actor KeychainTokenStore: TokenStore {
    public let service: String
    public let account: String
    public let accessGroup: String?

    public init(service: String = "appd.session", account: String = "default", accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    private var item: [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func load() -> Session? {
        var query = item
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var found: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &found) == errSecSuccess, let data = found as? Data else { return nil }
        do {
            return try JSONParser.parse(Array(data)).decode(as: Session.self)
        } catch {
            SecItemDelete(item as CFDictionary)
            return nil
        }
    }

    public func save(_ session: Session) {
        guard let json = try? JSONValue(encoding: session) else { return }
        let values: [String: Any] = [
            kSecValueData as String: Data(JSONWriter.bytes(json)), kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
        ]
        if SecItemUpdate(item as CFDictionary, values as CFDictionary) == errSecItemNotFound {
            SecItemAdd(item.merging(values) { $1 } as CFDictionary, nil)
        }
    }

    public func clear() {
        SecItemDelete(item as CFDictionary)
    }
}
#endif

// SPDX-License-Identifier: Apache-2.0
/// Ids offline clients make for what they create (a todo added on a train): a UUID, so two
/// devices never pick the same one, stored as the plugin's prefix and the UUID in lowercase.
public enum ClientID {
    /// `prefix` + the UUID in lowercase, for a UUID (`8-4-4-4-12` hex digits, any case) given
    /// with or without `prefix`; nil when it is not one.
    public static func canonical(_ raw: String, prefix: String) -> String? {
        let uuid = raw.lowercased().hasPrefix(prefix.lowercased()) ? String(raw.dropFirst(prefix.count)) : raw
        let groups = uuid.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy({ $0.allSatisfy(\.isHexDigit) }) else { return nil }
        return prefix + uuid.lowercased()
    }

    /// What a plugin says when the id is not a UUID.
    public static let expected = "must be a UUID like 6f1c2a4e-1b2d-4c3e-8f4a-5b6c7d8e9f00"
}

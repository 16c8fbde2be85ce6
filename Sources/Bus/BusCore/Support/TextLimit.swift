// SPDX-License-Identifier: Apache-2.0
/// The bound on one text field, declared once beside the field's rules: how many characters
/// (Unicode scalars) and how many UTF-8 bytes it may hold. Grapheme clusters are not counted:
/// one "character" of a letter and 5,000 combining marks would be a 10 KB title.
public struct TextLimit: Sendable, Equatable {
    /// Unicode scalars at most (what the docs call characters).
    public let characters: Int
    /// UTF-8 bytes at most: what is stored, replayed and sent on.
    public let bytes: Int

    /// `bytes` defaults to four per character, the most a scalar takes in UTF-8.
    public init(characters: Int, bytes: Int? = nil) {
        self.characters = characters
        self.bytes = bytes ?? characters * 4
    }

    /// Why `text` is over the limit ("is longer than 200 characters"), or nil. The byte count
    /// is read first: it costs nothing for a native string, so a megabyte is refused at once.
    public func violation(of text: String) -> String? {
        if text.utf8.count > bytes { return "is longer than \(bytes) bytes of UTF-8 (at most \(characters) characters)" }
        if text.unicodeScalars.count > characters { return "is longer than \(characters) characters (Unicode scalars)" }
        return nil
    }

    /// The size the budgets of a prompt or a page count: Unicode scalars.
    public static func characters(of text: String) -> Int { text.unicodeScalars.count }
}

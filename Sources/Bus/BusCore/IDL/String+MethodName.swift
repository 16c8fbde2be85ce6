// SPDX-License-Identifier: Apache-2.0
extension String {
    /// A qualified method name's two parts: `io.appd.Todos.Add` → (`io.appd.Todos`, `Add`); nil
    /// without a dot. Found by byte (a name arrives with every call, and a `Character` search
    /// would break grapheme clusters for each one).
    public var methodNameParts: (interface: Substring, member: Substring)? {
        guard let dot = utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        return (self[..<dot], self[utf8.index(after: dot)...])
    }
}

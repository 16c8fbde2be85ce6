// SPDX-License-Identifier: Apache-2.0
/// The link a password-reset mail carries into the app (a universal link, or the app's own
/// scheme): the operator's template (`authResetLinkTemplate`) with `{token}` where the reset
/// token goes. The app opens on it, reads the token and calls `ResetPassword`.
public struct ResetLinkTemplate: Sendable, Equatable {
    public let text: String

    public init(_ text: String) throws(InvalidResetLinkTemplate) {
        guard text.contains("{token}") else { throw InvalidResetLinkTemplate("must contain {token}, where the reset token goes") }
        let scheme = text.prefix { $0 != ":" }
        guard scheme.count < text.count, let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else {
            throw InvalidResetLinkTemplate("must be an absolute link: https://… (a universal link) or the app's own scheme, myapp://…")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) else {
            throw InvalidResetLinkTemplate("must not contain spaces or control characters")
        }
        self.text = text
    }

    /// The link for `token` (URL-safe base64: nothing in it needs escaping).
    public func link(for token: String) -> String { text.replacing("{token}", with: token) }
}

/// `authResetLinkTemplate` is not a usable link template; says what to fix.
public struct InvalidResetLinkTemplate: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

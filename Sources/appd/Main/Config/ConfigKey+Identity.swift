// SPDX-License-Identifier: Apache-2.0
import Auth

/// The keys of sign-in with Apple and Google, Apple's server side, email verification and
/// guest accounts (part of `ConfigKey.all`).
extension ConfigKey {
    static let identity: [ConfigKey] = [
        list(
            "appleAudiences", "--apple-audiences",
            "Sign in with Apple: the app's client ids (iOS bundle id, web Services ID), comma-separated; none turns it off (default).",
            check: clientID, set: { $0.identity.apple.audiences = $1 }),
        https("appleKeysUrl", "--apple-keys-url", "Apple's JWK set (default: https://appleid.apple.com/auth/keys).") { $0.identity.apple.keysURL = $1 },
        flag("appleCheckNonce", "--apple-check-nonce", "Sign in with Apple: check the token's nonce against the one the app sends (default: true).") {
            $0.identity.apple.checkNonce = $1
        },
        list(
            "googleAudiences", "--google-audiences", "Google Sign-In: the app's OAuth client ids (iOS, web), comma-separated; none turns it off (default).",
            check: clientID, set: { $0.identity.google.audiences = $1 }),
        https("googleKeysUrl", "--google-keys-url", "Google's JWK set (default: https://www.googleapis.com/oauth2/v3/certs).") { $0.identity.google.keysURL = $1 },
        flag(
            "googleCheckNonce", "--google-check-nonce",
            "Google Sign-In: check the token's nonce (default: true; false when the app uses Google's iOS SDK, which sets its own)."
        ) { $0.identity.google.checkNonce = $1 },
        list(
            "googleHostedDomains", "--google-hosted-domains", "Google Sign-In: only accounts of these Workspace domains (hd), comma-separated (default: any).",
            check: clientID, set: { $0.identity.google.hostedDomains = $1.map { $0.lowercased() } }),
        text("identityCaFile", "--identity-ca-file", "Trusted CA certificates (PEM) for the providers' key URLs instead of the system store.") {
            $0.identity.caFile = $1
        },
        seconds("idTokenLeewaySeconds", "--id-token-leeway", "Clock difference allowed on an ID token's exp, iat and nbf (default: 60).") {
            $0.identity.leeway = $1
        },
        text("appleTeamId", "--apple-team-id", "Apple's token endpoint: your Apple Developer team id.") { $0.appleTeamID = $1 },
        text("appleKeyId", "--apple-key-id", "Apple's token endpoint: the Sign in with Apple key's id.") { $0.appleKeyID = $1 },
        text("applePrivateKeyFile", "--apple-private-key-file", "Apple's token endpoint: the AuthKey_<key id>.p8 file (chmod 600).") {
            $0.applePrivateKeyFile = $1
        },
        ConfigKey(
            name: "applePrivateKey", flag: "--apple-private-key", help: "The .p8 key's PEM text instead of a file (secret; prefer the environment).",
            secret: true
        ) { config, value throws(ConfigProblem) in
            guard let text = value.stringValue, text.contains("PRIVATE KEY") else { throw ConfigProblem("needs the PEM text of the .p8 key") }
            config.applePrivateKey = text
        },
        text("appleClientId", "--apple-client-id", "The client id Apple's codes are issued to (default: the first of appleAudiences).") { $0.appleClientID = $1 },
        https("appleTokenUrl", "--apple-token-url", "Apple's token endpoint (default: https://appleid.apple.com/auth/token).") { $0.appleTokenURL = $1 },
        https("appleRevokeUrl", "--apple-revoke-url", "Apple's revoke endpoint (default: https://appleid.apple.com/auth/revoke).") { $0.appleRevokeURL = $1 },
        text("tokenEncryptionKeyFile", "--token-encryption-key-file", "A file with 32 random bytes in base64 sealing providers' refresh tokens (chmod 600).") {
            $0.tokenEncryptionKeyFile = $1
        },
        ConfigKey(
            name: "tokenEncryptionKey", flag: "--token-encryption-key", help: "The sealing key itself, base64 (secret; prefer the environment).", secret: true
        ) { config, value throws(ConfigProblem) in
            guard let text = value.stringValue, !text.isEmpty else { throw ConfigProblem("needs 32 bytes in base64") }
            config.tokenEncryptionKey = text
        },
        flag("guestAccounts", "--guest-accounts", "Let SignInAnonymously make guest accounts (default: false).") { $0.guestAccounts = $1 },
        integer("guestIdleDays", "--guest-idle-days", "Delete guest accounts not seen for this many days (default: 30).") { $0.guestIdleDays = $1 },
        flag("requireVerifiedEmail", "--require-verified-email", "Refuse sign-in until the account's email is verified (default: false).") {
            $0.requireVerifiedEmail = $1
        },
        ConfigKey(
            name: "authResetLinkTemplate", flag: "--auth-reset-link-template",
            help:
                "A link into the app for password-reset mails, with {token} where the reset token goes (e.g. https://app.example.com/reset?token={token}); default: none, "
                + "the mail carries the token only."
        ) { config, value throws(ConfigProblem) in
            guard let text = value.stringValue, !text.isEmpty else { throw ConfigProblem("needs a link with {token} in it") }
            do throws(InvalidResetLinkTemplate) {
                config.authResetLinkTemplate = try ResetLinkTemplate(text).text
            } catch {
                throw ConfigProblem(error.description)
            }
        },
        seconds("reauthenticationSeconds", "--reauthentication-seconds", "How recent a sign-in must be to delete an account without its password (default: 300).") {
            $0.identity.reauthenticationWindow = $1
        },
    ]
}

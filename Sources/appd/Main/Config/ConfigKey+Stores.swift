// SPDX-License-Identifier: Apache-2.0

/// The keys of in-app purchases without a middleman: StoreKit 2 and the App Store Server API,
/// Google Play Billing (part of `ConfigKey.all`, in its order; docs/ios.md).
extension ConfigKey {
    static let stores: [ConfigKey] = [
        text(
            "appStoreRootCertificates", "--app-store-root-certificates", "StoreKit 2: the root certificates App Store payloads must chain to (Apple Root CA - G3, .cer or PEM)."
        ) {
            $0.payments.appStoreRootCertificates = $1
        },
        text("appStoreBundleId", "--app-store-bundle-id", "StoreKit 2: the app's bundle id (payloads for another app are refused).") {
            $0.payments.appStoreBundleID = $1
        },
        list("appStoreEnvironments", "--app-store-environments", "StoreKit 2: the environments accepted, Production and/or Sandbox (default Production).") {
            environment throws(ConfigProblem) in
            guard environment == "Production" || environment == "Sandbox" else { throw ConfigProblem("each environment is Production or Sandbox") }
        } set: {
            $0.payments.appStoreEnvironments = $1.isEmpty ? ["Production"] : Set($1)
        },
        text("appStoreIssuerId", "--app-store-issuer-id", "App Store Server API (Restore): the key's issuer id from App Store Connect.") {
            $0.payments.appStoreIssuerID = $1
        },
        text("appStoreKeyId", "--app-store-key-id", "App Store Server API (Restore): the key id.") { $0.payments.appStoreKeyID = $1 },
        text("appStorePrivateKeyFile", "--app-store-private-key-file", "App Store Server API (Restore): the SubscriptionKey_<key id>.p8 (mode 600).") {
            $0.appStorePrivateKeyFile = $1
        },
        https("appStoreApiUrl", "--app-store-api-url", "App Store Server API base (default: Apple's, for the accepted environment).") {
            $0.payments.appStoreAPIURL = $1
        },
        text("appStoreCaFile", "--app-store-ca-file", "Trusted CA certificates (PEM) for the App Store Server API instead of the system store.") {
            $0.payments.appStoreCAFile = $1
        },
        text("googlePlayPackageName", "--google-play-package-name", "Google Play Billing: the app's package name.") { $0.payments.googlePlayPackageName = $1 },
        text("googlePlayServiceAccountFile", "--google-play-service-account-file", "Google Play Billing: the service account's JSON key (mode 600).") {
            $0.googlePlayServiceAccountFile = $1
        },
        text("googlePlayPushAudience", "--google-play-push-audience", "Google Play Billing: the audience set on the Pub/Sub push subscription.") {
            $0.payments.googlePlayPushAudience = $1
        },
        text("googlePlayPushServiceAccount", "--google-play-push-service-account", "Google Play Billing: the service account the push authenticates as.") {
            $0.payments.googlePlayPushServiceAccount = $1
        },
        https("googlePlayApiUrl", "--google-play-api-url", "Google Play Developer API base (default: Google's).") { $0.payments.googlePlayAPIURL = $1 },
        https("googlePlayKeysUrl", "--google-play-keys-url", "Google's signing keys for pushes (default: https://www.googleapis.com/oauth2/v3/certs).") {
            $0.payments.googlePlayKeysURL = $1
        },
        text("googlePlayCaFile", "--google-play-ca-file", "Trusted CA certificates (PEM) for Google's APIs instead of the system store.") {
            $0.payments.googlePlayCAFile = $1
        },
    ]
}

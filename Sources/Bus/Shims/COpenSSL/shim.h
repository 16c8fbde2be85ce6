#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/bn.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ecdsa.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/objects.h>

// Key construction through OpenSSL 3's parameter API, whose string-named parameters and
// variadic helpers do not import into Swift. Each returns NULL on failure; the caller frees
// the key with EVP_PKEY_free.

/// An RSA public key from its big-endian modulus and exponent (a JWK's n and e).
static inline EVP_PKEY *appd_rsa_public_key(const unsigned char *n, size_t n_len, const unsigned char *e, size_t e_len) {
    EVP_PKEY *key = NULL;
    BIGNUM *bn_n = BN_bin2bn(n, (int)n_len, NULL), *bn_e = BN_bin2bn(e, (int)e_len, NULL);
    OSSL_PARAM_BLD *build = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    if (bn_n && bn_e && build && OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_N, bn_n) &&
        OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_RSA_E, bn_e) && (params = OSSL_PARAM_BLD_to_param(build)) &&
        (ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) && EVP_PKEY_fromdata_init(ctx) == 1) {
        if (EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(build);
    BN_free(bn_n);
    BN_free(bn_e);
    return key;
}

/// A P-256 public key from its uncompressed point (0x04 || x || y, 65 bytes); NULL when the
/// point is not on the curve.
static inline EVP_PKEY *appd_p256_public_key(const unsigned char *point, size_t point_len) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"P-256", 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, point_len);
    params[2] = OSSL_PARAM_construct_end();
    if (ctx && EVP_PKEY_fromdata_init(ctx) == 1) {
        if (EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    if (key) {
        // fromdata does not check the point: an off-curve point is refused here.
        EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        int ok = check && EVP_PKEY_public_check(check) == 1;
        EVP_PKEY_CTX_free(check);
        if (!ok) { EVP_PKEY_free(key); key = NULL; }
    }
    return key;
}

/// A fresh P-256 key pair.
static inline EVP_PKEY *appd_p256_generate(void) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx && EVP_PKEY_keygen_init(ctx) == 1 && EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1) {
        if (EVP_PKEY_generate(ctx, &key) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}

/// Whether `key` is an EC key on P-256.
static inline int appd_is_p256(EVP_PKEY *key) {
    char name[32] = {0};
    size_t length = 0;
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof name, &length) != 1) return 0;
    return strcmp(name, "prime256v1") == 0 || strcmp(name, "P-256") == 0;
}

/// The uncompressed public point of a P-256 key (65 bytes into `out`); 1 on success.
static inline int appd_p256_public_point(EVP_PKEY *key, unsigned char *out, size_t out_len) {
    size_t length = 0;
    EVP_PKEY_set_utf8_string_param(key, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed");
    return EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, out, out_len, &length) == 1 && length == 65;
}

/// The size in bits of an RSA key's modulus.
static inline int appd_key_bits(EVP_PKEY *key) { return EVP_PKEY_get_bits(key); }

// X.509, for certificate chains that sign payloads (the App Store's x5c headers).

/// A certificate from its DER bytes; NULL when they are not one. Free with X509_free.
static inline X509 *appd_x509_parse(const unsigned char *der, size_t length) {
    const unsigned char *cursor = der;
    X509 *certificate = d2i_X509(NULL, &cursor, (long)length);
    // Trailing bytes after the certificate are refused: one DER value, nothing else.
    if (certificate && cursor != der + length) { X509_free(certificate); return NULL; }
    return certificate;
}

/// Whether `certificate` carries an extension with the dotted `oid` (e.g. "1.2.840.113635.100.6.11.1").
static inline int appd_x509_has_extension(X509 *certificate, const char *oid) {
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    if (!object) return 0;
    int found = X509_get_ext_by_OBJ(certificate, object, -1) >= 0;
    ASN1_OBJECT_free(object);
    return found;
}

/// The certificate's public key (a new reference: free with EVP_PKEY_free); NULL if unreadable.
static inline EVP_PKEY *appd_x509_public_key(X509 *certificate) { return X509_get_pubkey(certificate); }

/// Verifies `leaf` up to one of `roots` (trusted), through `intermediates` (untrusted), as of
/// `at` (seconds since the epoch), with X.509 strict checks. Returns 0 when it verifies, else
/// OpenSSL's verification error (X509_V_ERR_*, > 0), or -1 when OpenSSL could not run the check.
static inline int appd_x509_verify(X509 *leaf, X509 *const *intermediates, int intermediate_count, X509 *const *roots, int root_count, int64_t at) {
    int result = -1;
    X509_STORE *store = X509_STORE_new();
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    if (!store || !untrusted || !context) goto done;
    for (int i = 0; i < root_count; i++) if (X509_STORE_add_cert(store, roots[i]) != 1) goto done;
    for (int i = 0; i < intermediate_count; i++) if (!sk_X509_push(untrusted, intermediates[i])) goto done;
    if (X509_STORE_CTX_init(context, store, leaf, untrusted) != 1) goto done;
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(context);
    X509_VERIFY_PARAM_set_time(param, (time_t)at);
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
    if (X509_verify_cert(context) == 1) {
        result = 0;
    } else {
        int error = X509_STORE_CTX_get_error(context);
        result = error > 0 ? error : -1;  /* a failure must never read as success */
    }
done:
    X509_STORE_CTX_free(context);
    sk_X509_free(untrusted);
    X509_STORE_free(store);
    return result;
}

/// OpenSSL's words for a verification error.
static inline const char *appd_x509_error_text(int error) { return X509_verify_cert_error_string(error); }

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

// The part of OpenSSL's libcrypto that postbackd uses (Debian's libssl-dev, OpenSSL 3).
// Only Sources/PostbackKit/Verification/OpenSSL/ imports this module.
#ifndef C_POSTBACKD_OPENSSL_SHIM_H
#define C_POSTBACKD_OPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/// `OPENSSL_free` is a function-like macro that Swift cannot import.
static inline void CPostbackdOpenSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

/// `EC_GROUP_precompute_mult` is deprecated in OpenSSL 3 but remains its only way to build a
/// table of multiples for a generator of our choosing (ECFixedBase.swift sets a public key as
/// the generator). Wrapped here so that the deprecation is silenced in one place.
static inline int CPostbackdOpenSSL_EC_GROUP_precompute_mult(EC_GROUP *group, BN_CTX *context) {
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    return EC_GROUP_precompute_mult(group, context);
#pragma clang diagnostic pop
}

#endif

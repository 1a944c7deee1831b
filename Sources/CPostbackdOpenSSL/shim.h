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

#endif

#ifndef MOBILITYWATCH_CCRYPTO_SHIM_H
#define MOBILITYWATCH_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto (Debian libssl-dev): PBKDF2-HMAC-SHA512 for the console's staff passwords
   (mosquitto_passwd's $7$ format), a constant-time compare, and random bytes for session ids. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

/* PBKDF2-HMAC-SHA512 of `password` with `salt` over `iterations` into `out`: 1 on success. */
static inline int mw_pbkdf2_sha512(const void *password, int passwordLength, const unsigned char *salt, int saltLength, int iterations,
                                   unsigned char *out, int outLength) {
    return PKCS5_PBKDF2_HMAC((const char *)password, passwordLength, salt, saltLength, iterations, EVP_sha512(), outLength, out);
}
#endif

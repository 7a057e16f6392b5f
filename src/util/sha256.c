#include "sha256.h"

#include <openssl/evp.h>
#include <string.h>

void sha256(const void *p, size_t n, unsigned char out[32]) {
    if (!EVP_Digest(p, n, out, NULL, EVP_sha256(), NULL)) memset(out, 0, 32);
}

void sha256_hex(const void *p, size_t n, char out[65]) {
    static const char digits[] = "0123456789abcdef";
    unsigned char d[32];
    sha256(p, n, d);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[64] = 0;
}

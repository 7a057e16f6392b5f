/*
 * sha256.h - SHA-256 (OpenSSL's libcrypto) for cache keys and entries.
 */
#ifndef TACK_SHA256_H
#define TACK_SHA256_H

#include <stddef.h>

/* out: 32 bytes.  A failure (which OpenSSL does not report for SHA-256 in
 * practice) gives all zeros. */
void sha256(const void *p, size_t n, unsigned char out[32]);
/* The same, as 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *p, size_t n, char out[65]);

#endif

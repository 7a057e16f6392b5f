/* half.c - binary16 conversions (see half.h), on the bits alone. */
#include "util/half.h"

#include <string.h>

/* Rounds sign * sig * 2^(e - frac_bits) to a half, where sig holds
 * frac_bits + 1 significant bits (the leading one included) and e is the
 * unbiased exponent.  The kept bits are shifted out by `shift`; the rest
 * decides the rounding, ties going to the even half. */
static uint16_t round_to_half(uint16_t sign, int e, uint64_t sig, int frac_bits) {
    if (e > 15) return sign | 0x7c00; /* 2^16 and up: past 65520 */
    int shift = e >= -14 ? frac_bits - 10 : frac_bits - 24 - e; /* normal : subnormal */
    if (shift > frac_bits + 1) return sign; /* below half the smallest subnormal */
    uint64_t kept = sig >> shift, rest = sig & (((uint64_t)1 << shift) - 1);
    uint64_t halfway = (uint64_t)1 << (shift - 1);
    int up = rest > halfway || (rest == halfway && (kept & 1));
    /* A normal half: exponent field plus the fraction (the leading one
     * dropped).  A carry out of the fraction steps the exponent, up to
     * infinity at 65520; a subnormal that rounds up to 1024 is the
     * smallest normal, 0x0400, by the same carry. */
    uint32_t h = e >= -14 ? ((uint32_t)(e + 15) << 10) + (uint32_t)(kept - 1024) : (uint32_t)kept;
    return (uint16_t)(sign | (h + (uint32_t)up));
}

uint16_t half_from_double(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    int exp = (int)((b >> 52) & 0x7ff);
    uint64_t frac = b & (((uint64_t)1 << 52) - 1);
    if (exp == 0x7ff) return frac ? (uint16_t)(sign | 0x7e00 | (frac >> 42)) : (uint16_t)(sign | 0x7c00);
    if (exp == 0) return sign; /* zero, or a double subnormal: far below any half */
    return round_to_half(sign, exp - 1023, frac | ((uint64_t)1 << 52), 52);
}

uint16_t half_from_float(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000);
    int exp = (int)((b >> 23) & 0xff);
    uint32_t frac = b & 0x7fffff;
    if (exp == 0xff) return frac ? (uint16_t)(sign | 0x7e00 | (frac >> 13)) : (uint16_t)(sign | 0x7c00);
    if (exp == 0) return sign;
    return round_to_half(sign, exp - 127, frac | 0x800000u, 23);
}

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, frac = h & 0x3ff, b;
    if (exp == 0x1f) {
        b = sign | 0x7f800000u | (frac << 13);
    } else if (exp == 0) {
        float v = (float)frac * 0x1p-24f; /* exact: at most 10 bits */
        memcpy(&b, &v, sizeof b);
        b |= sign;
    } else {
        b = sign | ((exp - 15 + 127) << 23) | (frac << 13);
    }
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

float half_round(double x) { return half_to_float(half_from_double(x)); }

/*
 * half.h - IEEE binary16 ("half", tack.f16) conversions on the host, exact
 * and independent of the FPU's rounding mode: to half rounds to nearest,
 * ties to even, overflows to infinity, keeps -0.0 and subnormals, and
 * gives a quiet NaN with the sign and top payload bits of a NaN (as x86's
 * F16C and ARM's fcvt do).  Used where Tack itself converts (constant
 * folding, the GPU launch range) and as the CPU JIT's half-precision
 * library calls on targets without conversion instructions.
 */
#ifndef TACK_HALF_H
#define TACK_HALF_H

#include <stdint.h>

uint16_t half_from_float(float x);
uint16_t half_from_double(double x); /* one rounding, never via float */
float half_to_float(uint16_t h);     /* exact: every half is a float */

/* x rounded to the nearest half, as the float holding it. */
float half_round(double x);

#endif

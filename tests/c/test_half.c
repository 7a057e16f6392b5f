/* test_half.c - the host's binary16 conversions (util/half.c) against
 * known answers and, where the C compiler has _Float16 (GCC 12 and newer
 * on x86-64), against its conversions: every half to float, a stride
 * through every float, and doubles at and beside every rounding tie.  Then
 * TACK_F16 through the C API: names, a launch on the CPU, the variant key,
 * and arrays of f16 vectors refused. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "tack.h"
#include "util/half.h"

static uint32_t fbits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float from_fbits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static int is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

static void known_answers(void) {
    CHECK(half_from_double(65504.0) == 0x7bff);
    CHECK(half_from_double(65519.99) == 0x7bff);
    CHECK(half_from_double(65520.0) == 0x7c00);  /* the tie rounds to even: inf */
    CHECK(half_from_float(-65520.0f) == 0xfc00);
    CHECK(half_from_double(1e300) == 0x7c00);
    CHECK(half_from_double(0x1p-24) == 0x0001);  /* the smallest subnormal */
    CHECK(half_from_double(0x1p-25) == 0x0000);  /* half of it: ties to even 0 */
    CHECK(half_from_double(0x1p-25 + 0x1p-60) == 0x0001);
    CHECK(half_from_double(-0x1p-26) == 0x8000); /* -0.0 */
    CHECK(half_from_double(3 * 0x1p-25) == 0x0002); /* 1.5 units: ties to even 2 */
    CHECK(half_from_double(0x1p-14 - 0x1p-25) == 0x0400); /* rounds up to the smallest normal */
    CHECK(half_from_double(-0.0) == 0x8000);
    CHECK(half_from_double(0.0) == 0x0000);
    CHECK(half_from_double(1.0 + 0x1p-11) == 0x3c00);           /* tie: to even 1.0 */
    CHECK(half_from_double(1.0 + 3 * 0x1p-11) == 0x3c02);       /* tie: to even up */
    CHECK(half_from_double(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01); /* past the tie, below float's ulp */
    CHECK(half_from_float(1.0f + 0x1p-11f + 0x1p-23f) == 0x3c01);
    CHECK(half_from_double(INFINITY) == 0x7c00);
    CHECK(half_from_double(-INFINITY) == 0xfc00);
    CHECK(is_half_nan(half_from_double(NAN)) && (half_from_double(NAN) & 0x200));
    CHECK(is_half_nan(half_from_float(-NAN)) && (half_from_float(-NAN) & 0x8000));
    /* A signalling NaN whose payload is only in the low bits stays a NaN. */
    CHECK(is_half_nan(half_from_float(from_fbits(0x7f800001u))));
    CHECK(half_to_float(0x7bff) == 65504.0f);
    CHECK(half_to_float(0x0001) == 0x1p-24f);
    CHECK(half_to_float(0x03ff) == 1023 * 0x1p-24f);
    CHECK(fbits(half_to_float(0x8000)) == 0x80000000u);
    CHECK(isinf(half_to_float(0xfc00)) && half_to_float(0xfc00) < 0);
    CHECK(isnan(half_to_float(0x7e00)));
    CHECK(half_round(0.1) == 0x1.998p-4f);
    /* Every finite half survives the round trip, both ways. */
    int trips = 1;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
        float f = half_to_float((uint16_t)h);
        trips &= half_from_float(f) == h && half_from_double(f) == h;
    }
    CHECK(trips);
}

#ifdef __FLT16_MAX__
static uint16_t ref_bits(_Float16 v) {
    uint16_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* Equal halves; for NaNs only NaN-ness and the sign (payloads may differ). */
static int same_half(uint16_t a, uint16_t b) {
    if (is_half_nan(a) || is_half_nan(b)) return is_half_nan(a) && is_half_nan(b) && (a >> 15) == (b >> 15);
    return a == b;
}

static void against_compiler(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t hb = (uint16_t)h;
        _Float16 v;
        memcpy(&v, &hb, sizeof v);
        float mine = half_to_float(hb), ref = (float)v;
        bad += isnan(ref) ? !isnan(mine) : fbits(mine) != fbits(ref);
    }
    CHECK(bad == 0);
    bad = 0;
    for (uint64_t b = 0; b < 0x100000000u; b += 331) {
        float f = from_fbits((uint32_t)b);
        bad += !same_half(half_from_float(f), ref_bits((_Float16)f));
    }
    CHECK(bad == 0);
    /* Doubles at each tie between neighbouring halves and one double ulp
     * either side, and the halves' own values. */
    bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double lo = half_to_float((uint16_t)h), hi = h + 1 < 0x7c00 ? half_to_float((uint16_t)(h + 1)) : 65536.0;
        double mid = (lo + hi) / 2, probes[4] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY), lo};
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < 2; s++) {
                double x = s ? -probes[k] : probes[k];
                bad += !same_half(half_from_double(x), ref_bits((_Float16)x));
            }
    }
    CHECK(bad == 0);
    printf("compared with the compiler's _Float16\n");
}
#endif

static const char *AXPY =
    "@tack.kernel\n"
    "def axpy(x, y, out, a):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = a * x[i] + y[i]\n";

static const char *FIRST =
    "@tack.kernel\n"
    "def first(v, out):\n"
    "    for i in range(out.shape[0]):\n"
    "        out[i] = v[i].x\n";

static void c_api(void) {
    CHECK(tack_dtype_size(TACK_F16) == 2);
    CHECK(!strcmp(tack_dtype_name(TACK_F16), "f16"));
    CHECK(tack_dtype_from_name("f16") == TACK_F16);
    tack_error err;
    tack_device *dev = tack_device_get("cpu", &err);
    tack_kernel *k = tack_kernel_create(AXPY, "test_half.py", 1, NULL, NULL, &err);
    CHECK(dev && k);
    if (!dev || !k) return;
    enum { N = 64 };
    uint16_t x[N], out[N];
    double y[N];
    for (int i = 0; i < N; i++) {
        x[i] = half_from_double(i * 1000.5 - 30000);
        y[i] = i * 0.1;
        out[i] = 0x1234;
    }
    int64_t n = N;
    tack_arg a[4] = {tack_arg_array(x, TACK_F16, 1, &n, 0), tack_arg_array(y, TACK_F64, 1, &n, 0),
                     tack_arg_array(out, TACK_F16, 1, &n, 1), tack_arg_float(3.0)};
    CHECK(tack_kernel_launch(k, dev, a, 4, &err) == TACK_OK);
    /* f16 * f64 scalar (f64: an f64 array is passed) + f64, rounded once. */
    int bad = 0;
    for (int i = 0; i < N; i++) bad += out[i] != half_from_double(3.0 * half_to_float(x[i]) + y[i]);
    CHECK(bad == 0);
    tack_variant_key key;
    CHECK(tack_kernel_variant_key(k, dev, 0, &key) == TACK_OK && key.params[0].type == TACK_F16 &&
          key.params[0].is_array && key.params[2].type == TACK_F16 && key.params[3].type == TACK_F64);
    tack_kernel_free(k);
    /* Vectors of f16 are refused before anything runs. */
    k = tack_kernel_create(FIRST, "test_half.py", 1, NULL, NULL, &err);
    CHECK(k != NULL);
    if (!k) return;
    int64_t vshape[2] = {N / 4, 4}, nv = N / 4;
    uint16_t before = out[0];
    tack_arg v[2] = {tack_arg_vector_array(x, TACK_F16, 4, 1, vshape, 0),
                     tack_arg_array(out, TACK_F16, 1, &nv, 1)};
    CHECK(tack_kernel_launch(k, dev, v, 2, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "'v'") && strstr(err.message, "f16"));
    CHECK(out[0] == before);
    tack_kernel_free(k);
}

int main(void) {
    known_answers();
    c_api();
#ifdef __FLT16_MAX__
    against_compiler();
#else
    printf("no _Float16 in this compiler: known answers only\n");
#endif
    return CHECK_DONE();
}

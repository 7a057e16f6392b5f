/* test_matrices.c - arrays of matrices through the public C API on the
 * CPU: vec_width TACK_MAT_WIDTH(n, n) with n*n components per element, row
 * by row; a kernel inverting each, checked against a 2x2 inverse written
 * here; the width in the variant key; a width Tack has no matrix for
 * refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tack.h"

static const char *INVERT =
    "def invert(m, out):\n    for i in range(m.shape[0]):\n"
    "        out[i] = tack.inverse(m[i]) @ m[i].T\n";

int main(void) {
    tack_error err;
    tack_device *cpu = tack_device_get("cpu", &err);
    if (!cpu) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    tack_kernel *k = tack_kernel_create(INVERT, "matrices.py", 1, NULL, NULL, &err);
    if (!k) fprintf(stderr, "%s\n", err.message);
    CHECK(k != NULL);
    if (!k) return CHECK_DONE();
    enum { N = 5 };
    double m[N * 4], out[N * 4];
    for (int i = 0; i < N; i++) {
        m[4 * i + 0] = 2.0 + i, m[4 * i + 1] = 1.0, m[4 * i + 2] = -1.0, m[4 * i + 3] = 3.0;
        for (int c = 0; c < 4; c++) out[4 * i + c] = -7;
    }
    int64_t n = N;
    tack_arg args[2] = {tack_arg_vector_array(m, TACK_F64, TACK_MAT_WIDTH(2, 2), 1, &n, 0),
                        tack_arg_vector_array(out, TACK_F64, TACK_MAT_WIDTH(2, 2), 1, &n, 1)};
    CHECK(args[0].ndim == 2 && args[0].shape[1] == 4);
    CHECK(tack_kernel_launch(k, cpu, args, 2, &err) == TACK_OK);
    int ok = 1;
    for (int i = 0; i < N; i++) {
        const double *a = m + 4 * i;
        double det = a[0] * a[3] - a[1] * a[2];
        double inv[4] = {a[3] / det, -a[1] / det, -a[2] / det, a[0] / det};
        double at[4] = {a[0], a[2], a[1], a[3]};
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 2; c++) {
                double want = inv[2 * r] * at[c] + inv[2 * r + 1] * at[2 + c];
                ok &= fabs(out[4 * i + 2 * r + c] - want) < 1e-12;
            }
    }
    CHECK(ok);
    tack_variant_key key;
    memset(&key, 0, sizeof key);
    CHECK(tack_kernel_num_variants(k, cpu) == 1 && tack_kernel_variant_key(k, cpu, 0, &key) == TACK_OK);
    CHECK(key.num_vec == 2 && key.vec_width[0] == TACK_MAT_WIDTH(2, 2));
    /* 0x31 is no width (a column count of 1): refused, naming the parameter.
     * (2x3 is a matrix dtype now, tack.matrix(2, 3, ...).) */
    CHECK(!tack_width_valid(0x31) && tack_width_valid(TACK_MAT_WIDTH(2, 3)));
    args[0].vec_width = 0x31;
    args[0].shape[1] = 3;
    CHECK(tack_kernel_launch(k, cpu, args, 2, &err) != TACK_OK && strstr(err.message, "'m'"));
    /* The codes of 16-row and 16-column shapes: one per shape, in a byte. */
    int seen[256] = {0}, clash = 0;
    for (int r = 2; r <= 16; r++)
        for (int c = 2; c <= 16; c++) {
            int w = TACK_MAT_WIDTH(r, c);
            clash |= w <= TACK_MAX_VEC_WIDTH || w > 255 || w == TACK_COMPLEX_WIDTH ||
                     w == TACK_QUAT_WIDTH || seen[w]++;
            clash |= tack_width_rows(w) != r || tack_width_cols(w) != c || !tack_width_valid(w) ||
                     tack_width_components(w) != r * c;
        }
    CHECK(!clash);
    tack_kernel_free(k);
    return CHECK_DONE();
}

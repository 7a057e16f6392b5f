/* test_launch_bounds.c - the accesses checked against the launch range
 * outside debug mode: which ones the analysis of an IR template finds
 * (passes/launch_bounds.c), and, through the public C API, a launch that
 * would leave an array refused with TACK_ERR_INDEX before anything runs
 * (runtime/launch_check.c). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lower/lower.h"
#include "passes/passes.h"
#include "tack.h"

/* Device functions the kernels below call. */
static int resolve(void *ctx, const char *name, tack_name *out) {
    (void)ctx;
    const char *text = NULL;
    if (!strcmp(name, "get")) text = "@tack.func\ndef get(a, i):\n    return a[i]\n";
    if (!strcmp(name, "safe"))
        text = "@tack.func\ndef safe(a, i):\n    if i >= a.shape[0]:\n        return 0.0\n"
               "    return a[i]\n";
    if (!text) return lower_default_resolve(name, out);
    memset(out, 0, sizeof *out);
    out->kind = TACK_NAME_FUNC;
    out->text = text;
    out->filename = "dev.py";
    out->first_line = 1;
    return 0;
}

static int by_array(const void *pa, const void *pb) {
    const launch_check *a = pa, *b = pb;
    if (a->param != b->param) return a->param - b->param;
    if (a->dim != b->dim) return a->dim - b->dim;
    if (a->written != b->written) return b->written - a->written;
    if (a->axis != b->axis) return a->axis - b->axis;
    if (a->scalar != b->scalar) return a->scalar - b->scalar;
    return b->sign - a->sign;
}

/* The analysis of `src` as text, one entry per "; ":
 * "<array>.<dim> <axis> <lo>..<hi>[ +/-<scalar>] <r|w>", axis i0 (the
 * launch variable), i1, i2 (inner ndindex) or "-". */
static const char *checks_of(const char *src, const uint8_t *vec) {
    static char text[1024];
    static src_info info;
    arena a;
    arena_init(&a);
    info = (src_info){src, "test_launch_bounds.py", 1, NULL, 0};
    func_def *def;
    tack_error err;
    memset(&err, 0, sizeof err);
    ir_func *f = NULL;
    strcpy(text, "<error>");
    if (parse_function(&info, &a, &def, &err) == TACK_OK) {
        info.kernel_name = def->name;
        lower_input in = {.src = &info, .def = def, .vec_width = vec, .resolver = resolve};
        if (lower_kernel(&in, &f, &err) != TACK_OK) f = NULL;
    }
    if (!f) fprintf(stderr, "%s\n", err.message);
    if (f) {
        launch_check c[16];
        launch_loop loops[MAX_LAUNCH_LOOPS];
        int nloops;
        int n = launch_bounds(f, c, 16, loops, &nloops);
        /* Grouped by index range: each group's first entry counts it. */
        for (int i = 0; i < n;) {
            int size = c[i].group;
            CHECK(size >= 1 && i + size <= n);
            if (size < 1 || i + size > n) break;
            for (int j = i; j < i + size; j++)
                CHECK(c[j].axis == c[i].axis && c[j].lo == c[i].lo && c[j].hi == c[i].hi &&
                      c[j].scalar == c[i].scalar && c[j].sign == c[i].sign &&
                      (j == i || c[j].group == 0));
            if (i + size < n)
                CHECK(!(c[i + size].axis == c[i].axis && c[i + size].lo == c[i].lo &&
                        c[i + size].hi == c[i].hi && c[i + size].scalar == c[i].scalar &&
                        c[i + size].sign == c[i].sign));
            i += size;
        }
        for (int i = 0; i < n; i++) CHECK(c[i].slot == c[i].param * TACK_MAX_NDIM + c[i].dim);
        qsort(c, n, sizeof *c, by_array); /* the text lists them by array */
        size_t len = 0;
        text[0] = 0;
        for (int i = 0; i < n && len < sizeof text; i++) {
            char axis[16] = "-", scalar[64] = "";
            if (c[i].axis >= 0) snprintf(axis, sizeof axis, "i%d", c[i].axis);
            if (c[i].scalar >= 0)
                snprintf(scalar, sizeof scalar, " %c%s", c[i].sign > 0 ? '+' : '-',
                         f->params[c[i].scalar].name);
            len += snprintf(text + len, sizeof text - len, "%s%s.%d %s %lld..%lld%s %c",
                            i ? "; " : "", f->params[c[i].param].name, c[i].dim, axis,
                            (long long)c[i].lo, (long long)c[i].hi, scalar, c[i].written ? 'w' : 'r');
        }
        ir_func_free(f);
    }
    arena_free(&a);
    return text;
}

static int expect(const char *src, const uint8_t *vec, const char *want) {
    const char *got = checks_of(src, vec);
    if (!strcmp(got, want)) return 1;
    fprintf(stderr, "checks: got \"%s\", want \"%s\" for\n%s", got, want, src);
    return 0;
}

#define KERNEL(params, range, body) \
    "@tack.kernel\ndef k(" params "):\n    for i in " range ":\n" body

static void test_analysis(void) {
    /* range(x.shape[0]) proves x[i]; out[i] and y[i] are checked. */
    CHECK(expect(KERNEL("x, y, out", "range(x.shape[0])", "        out[i] = x[i] + y[i]\n"), NULL,
                 "y.0 i0 0..0 r; out.0 i0 0..0 w"));
    /* Constant offsets merge per array dimension; a scalar parameter is
     * added at dispatch. */
    CHECK(expect(KERNEL("a, out, n", "range(1, a.shape[0] - 1)",
                        "        out[i] = a[i - 1] + a[i] + a[i + 1] + a[i + n] + a[i - n]\n"),
                 NULL, "a.0 i0 -1..1 r; a.0 i0 0..0 +n r; a.0 i0 0..0 -n r; out.0 i0 0..0 w"));
    /* Constant and scalar indices; range(2, a.shape[0], 3) proves a[i] and
     * a[i - 2] too. */
    CHECK(expect(KERNEL("a, out, n", "range(2, a.shape[0], 3)",
                        "        out[i] = a[3] + a[n] + a[i] + a[i - 2] + a[i - 3]\n"),
                 NULL, "a.0 - 3..3 r; a.0 - 0..0 +n r; a.0 i0 -3..-3 r; out.0 i0 0..0 w"));
    /* A guarded access may be in bounds whatever its index: not checked,
     * nor ones in conditional expressions; one in an inner loop whose
     * range is known at launch is (issue 26, item 15). */
    CHECK(expect(KERNEL("a, out", "range(a.shape[0])",
                        "        if i > 0 and i < a.shape[0] - 1:\n"
                        "            out[i] = a[i - 1] + a[i + 1]\n"
                        "        for j in range(2):\n"
                        "            out[i + 5] = 0.0\n"
                        "        out[i] = a[i + 7] if i < 3 else 0.0\n"),
                 NULL, "out.0 i0 0..0 w; out.0 i0 5..5 w"));
    /* Inner loops: the loop variable is an axis of its own (i8 the first
     * loop, i9 the next); range(a.shape[1]) proves a[i, j] (not out[i, j]); a break or
     * continue guards what follows it; a range made of the launch variable,
     * or a loop variable the body assigns, is not known at launch. */
    CHECK(expect(KERNEL("a, out, m", "range(a.shape[0])",
                        "        for j in range(a.shape[1]):\n"
                        "            out[i, j] = a[i - 1, j] + a[i, j]\n"
                        "        for k in range(1, m - 1):\n"
                        "            out[i, k] = a[i, k + 1]\n"
                        "            if k > 3:\n"
                        "                continue\n"
                        "            out[i, k] = a[i, k + 2]\n"
                        "        for k in range(i):\n"
                        "            out[i, k] = a[i, k + 1]\n"
                        "        for k in range(m):\n"
                        "            k = k + 1\n"
                        "            out[i, k] = 0.0\n"),
                 NULL, "a.0 i0 -1..-1 r; a.1 i9 1..1 r; out.0 i0 0..0 w; out.0 i0 0..0 w; "
                       "out.1 i8 0..0 w; out.1 i9 0..0 w"));
    /* The launch variable plus a loop variable (a convolution's x[i + k])
     * is checked with both ranges (one entry: x[i + k - 1] and x[k + i]);
     * two loop variables, or one subtracted, are not (they are checked per
     * access); out[i] is proven by the launch range. */
    CHECK(expect(KERNEL("x, w, out", "range(out.shape[0])",
                        "        for k in range(w.shape[0]):\n"
                        "            out[i] += x[i + k - 1] * w[k] + x[k + i] + x[i - k]\n"
                        "            for l in range(3):\n"
                        "                out[i] += x[k + l]\n"),
                 NULL, "x.0 i0 -1..0 r"));
    /* Data-dependent and computed indices are not checked. */
    CHECK(expect(KERNEL("a, idx, out", "range(out.shape[0])",
                        "        out[i] = a[idx[i]] + a[i * 2] + a[2 - i] + a[n]\n"
                        "        n = i + 1\n"),
                 NULL, "idx.0 i0 0..0 r"));
    /* Locals followed along the spine, until assigned something else. */
    CHECK(expect(KERNEL("a, out", "range(out.shape[0])",
                        "        k = i + 2\n"
                        "        m = k - 1\n"
                        "        out[i] = a[k] + a[m]\n"
                        "        if a[0] > 0.0:\n"
                        "            k = 0\n"
                        "        out[k] = 1.0\n"),
                 NULL, "a.0 - 0..0 r; a.0 i0 1..2 r"));
    /* A reassigned launch variable is not followed at all. */
    CHECK(expect(KERNEL("a, out", "range(out.shape[0])",
                        "        out[i] = a[i]\n"
                        "        i = i + 1\n"),
                 NULL, ""));
    /* ndindex: each index against its own axis; range(a.shape[d]) proves
     * a[i, j] only in the dimension it came from. */
    CHECK(expect("@tack.kernel\ndef k(a, b, out):\n"
                 "    for i, j in tack.ndindex(a.shape[0], a.shape[1]):\n"
                 "        out[i, j] = a[i, j] + b[j, i] + a[i, j + 1]\n",
                 NULL, "a.1 i1 1..1 r; b.0 i1 0..0 r; b.1 i0 0..0 r; out.0 i0 0..0 w; out.1 i1 0..0 w"));
    /* Device functions: the argument's copy is followed; after a
     * conditional return nothing is checked. */
    CHECK(expect(KERNEL("a, b, out", "range(out.shape[0])",
                        "        out[i] = get(a, i + 1) + safe(b, i)\n"),
                 NULL, "a.0 i0 1..1 r"));
    /* Atomics count as writes; a vector array's component index is not a
     * launch dimension. */
    static const uint8_t vec[3] = {0, 3, 0};
    CHECK(expect(KERNEL("h, p, out", "range(out.shape[0])",
                        "        tack.atomic_add(h, i + 1, 1)\n"
                        "        out[i] = p[i].x + p[i].z\n"),
                 vec, "h.0 i0 1..1 w; p.0 i0 0..0 r"));
}

/* ---- the public API: a refused launch ---- */

static tack_device *dev;

static tack_kernel *make(const char *src) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "test_launch_bounds.py", 1, NULL, NULL, &err);
    if (!k) fprintf(stderr, "unexpected compile error: %s\n", err.message);
    return k;
}

static const char *ADD =
    "@tack.kernel\n"
    "def add(x, y, out):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] + y[i]\n";

static void test_refused(void) {
    tack_kernel *k = make(ADD);
    CHECK(k != NULL);
    if (!k) return;
    /* out has 4 elements and some room after them, which must stay as it
     * is: the launch is refused before it runs. */
    float x[16], y[16], out[8];
    for (int i = 0; i < 16; i++) x[i] = y[i] = (float)i;
    for (int i = 0; i < 8; i++) out[i] = -1.0f;
    int64_t n16 = 16, n4 = 4;
    tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &n16, 0), tack_arg_array(y, TACK_F32, 1, &n16, 0),
                     tack_arg_array(out, TACK_F32, 1, &n4, 1)};
    tack_error err;
    /* Twice: the second call takes the dispatch fast path. */
    for (int rep = 0; rep < 2; rep++) {
        CHECK(tack_kernel_launch(k, dev, a, 3, &err) == TACK_ERR_INDEX);
        CHECK(err.status == TACK_ERR_INDEX);
        CHECK(strstr(err.message, "kernel 'add': the launch writes out[0..15] but 'out' has shape (4,)"));
        for (int i = 0; i < 8; i++) CHECK(out[i] == -1.0f);
    }
    /* A prepared launch refuses it too. */
    tack_arg ok[3] = {tack_arg_array(x, TACK_F32, 1, &n4, 0), tack_arg_array(y, TACK_F32, 1, &n4, 0),
                      tack_arg_array(out, TACK_F32, 1, &n4, 1)};
    tack_launch *l = tack_launch_prepare(k, dev, ok, 3, &err);
    CHECK(l != NULL);
    if (l) {
        CHECK(tack_launch_run(l, ok, 3, &err) == TACK_OK && out[3] == 6.0f && out[4] == -1.0f);
        CHECK(tack_launch_run(l, a, 3, &err) == TACK_ERR_INDEX && out[4] == -1.0f);
        tack_launch_free(l);
    }
    /* An empty launch checks nothing, even against an empty array. */
    int64_t n0 = 0;
    tack_arg empty[3] = {tack_arg_array(x, TACK_F32, 1, &n0, 0), tack_arg_array(y, TACK_F32, 1, &n16, 0),
                         tack_arg_array(out, TACK_F32, 1, &n0, 1)};
    CHECK(tack_kernel_launch(k, dev, empty, 3, &err) == TACK_OK);
    tack_kernel_free(k);

    /* 2-D: one array too small in its second dimension. */
    tack_kernel *g = make("@tack.kernel\ndef grid(a, out):\n"
                          "    for i, j in tack.ndindex(out.shape[0], out.shape[1]):\n"
                          "        out[i, j] = a[i, j] * 2.0\n");
    CHECK(g != NULL);
    if (!g) return;
    float ga[4 * 3], gout[4 * 5];
    for (int i = 0; i < 12; i++) ga[i] = 1.0f;
    for (int i = 0; i < 20; i++) gout[i] = -1.0f;
    int64_t sa[2] = {4, 3}, so[2] = {4, 5};
    tack_arg ga_args[2] = {tack_arg_array(ga, TACK_F32, 2, sa, 0), tack_arg_array(gout, TACK_F32, 2, so, 1)};
    CHECK(tack_kernel_launch(g, dev, ga_args, 2, &err) == TACK_ERR_INDEX);
    CHECK(strstr(err.message, "kernel 'grid': the launch reads a[:, 0..4] but 'a' has shape (4, 3)"));
    for (int i = 0; i < 20; i++) CHECK(gout[i] == -1.0f);
    tack_kernel_free(g);
}

/* Scalar offsets, a negative step, and sums past 64 bits. */
static void test_offsets(void) {
    tack_kernel *k = make("@tack.kernel\ndef shift(a, out, k, start, step):\n"
                          "    for i in range(start, out.shape[0], step):\n"
                          "        out[i] = a[i + k]\n");
    CHECK(k != NULL);
    if (!k) return;
    float a[8], out[8];
    for (int i = 0; i < 8; i++) a[i] = (float)i, out[i] = -1.0f;
    int64_t n8 = 8, n4 = 4;
    tack_error err;
    tack_arg args[5] = {tack_arg_array(a, TACK_F32, 1, &n8, 0), tack_arg_array(out, TACK_F32, 1, &n4, 1),
                        tack_arg_int(4), tack_arg_int(0), tack_arg_int(1)};
    CHECK(tack_kernel_launch(k, dev, args, 5, &err) == TACK_OK && out[3] == 7.0f);
    args[2] = tack_arg_int(5);
    CHECK(tack_kernel_launch(k, dev, args, 5, &err) == TACK_ERR_INDEX);
    CHECK(strstr(err.message, "the launch reads a[5..8] but 'a' has shape (8,)"));
    args[2] = tack_arg_int(INT64_MAX);
    CHECK(tack_kernel_launch(k, dev, args, 5, &err) == TACK_ERR_INDEX);
    CHECK(strstr(err.message, "a[9223372036854775807..9223372036854775810]"));
    args[2] = tack_arg_int(INT64_MIN);
    args[3] = tack_arg_int(3);
    args[4] = tack_arg_int(-1);
    CHECK(tack_kernel_launch(k, dev, args, 5, &err) == TACK_OK); /* range(3, 4, -1): empty */
    args[1] = tack_arg_array(out, TACK_F32, 1, &n8, 1);
    args[3] = tack_arg_int(INT64_MAX);
    args[4] = tack_arg_int(INT64_MIN);
    CHECK(tack_kernel_launch(k, dev, args, 5, &err) == TACK_ERR_INDEX); /* one i: INT64_MAX */
    CHECK(strstr(err.message, "a[-1] but"));
    for (int i = 0; i < 8; i++) CHECK(out[i] == (i < 4 ? (float)(i + 4) : -1.0f));
    tack_kernel_free(k);
}

/* Debug mode keeps its own report (file:line, the failing index). */
static void test_debug_unchanged(void) {
    tack_kernel *k = make(ADD);
    if (!k) return;
    float x[16] = {0}, y[16] = {0}, out[4] = {0};
    int64_t n16 = 16, n4 = 4;
    tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &n16, 0), tack_arg_array(y, TACK_F32, 1, &n16, 0),
                     tack_arg_array(out, TACK_F32, 1, &n4, 1)};
    tack_error err;
    tack_set_debug(1);
    CHECK(tack_kernel_launch(k, dev, a, 3, &err) == TACK_ERR_INDEX);
    CHECK(strstr(err.message, "test_launch_bounds.py:4: index (4,) is out of bounds for 'out'"));
    tack_set_debug(0);
    tack_kernel_free(k);
}

int main(void) {
    tack_error err;
    dev = tack_device_get("cpu", &err);
    CHECK(dev != NULL);
    test_analysis();
    if (dev) {
        test_refused();
        test_offsets();
        test_debug_unchanged();
    }
    return CHECK_DONE();
}

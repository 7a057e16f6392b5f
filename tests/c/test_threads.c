/* test_threads.c - launches racing with what changes under them: debug mode
 * switched by another thread, template classes retired by another thread,
 * and a bounded stress run mixing both with several dtypes and shapes; and
 * the host's lock let go around long runs only (tack_set_release_threshold).
 * Every result is checked.  TACK_STRESS_SECONDS lengthens the stress run
 * (default 2 s) for runs by hand. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "tack.h"

static tack_device *dev;
static atomic_int stop;
static atomic_int failures;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static tack_kernel *make(const char *src) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "test_threads.py", 1, NULL, NULL, &err);
    if (!k) fprintf(stderr, "unexpected compile error: %s\n", err.message);
    return k;
}

static void fail(const char *what, const tack_error *err) {
    if (atomic_fetch_add(&failures, 1) < 5) fprintf(stderr, "%s: %s\n", what, err ? err->message : "");
}

static const char *SCALE =
    "def scale(x, out, a):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] * a\n";

/* ---- debug mode switched during launches ---- */

#define NLENGTHS 300 /* more signatures than the fast path's table holds */

static tack_kernel *scale_k;

static int run_scale(int64_t n, float *x, float *out) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)i, out[i] = -1;
    tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                     tack_arg_float(2.0)};
    tack_error err;
    if (tack_kernel_launch(scale_k, dev, a, 3, &err) != TACK_OK) {
        fail("scale", &err);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        if (out[i] != 2.0f * (float)i) {
            fail("scale: wrong result", NULL);
            return -1;
        }
    return 0;
}

static void *scale_launcher(void *arg) {
    (void)arg;
    float x[NLENGTHS + 1], out[NLENGTHS + 1];
    for (int64_t n = 1; !atomic_load(&stop); n = n % NLENGTHS + 1) run_scale(n, x, out);
    return NULL;
}

static void *debug_toggler(void *arg) {
    (void)arg;
    for (int on = 1; !atomic_load(&stop); on = !on) tack_set_debug(on);
    tack_set_debug(0);
    return NULL;
}

/* The launch read the mode twice: a debug template could be remembered
 * for a plain signature, and plain calls then failed for good. */
static void test_debug_toggle(void) {
    scale_k = make(SCALE);
    CHECK(scale_k != NULL);
    if (!scale_k) return;
    atomic_store(&failures, 0);
    atomic_store(&stop, 0);
    pthread_t th[3];
    pthread_create(&th[0], NULL, debug_toggler, NULL);
    pthread_create(&th[1], NULL, scale_launcher, NULL);
    pthread_create(&th[2], NULL, scale_launcher, NULL);
    for (double end = now() + 0.7; now() < end;) {
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK(atomic_load(&failures) == 0);
    /* Toggling has stopped: every signature must work in plain mode. */
    tack_set_debug(0);
    atomic_store(&failures, 0);
    float x[NLENGTHS + 1], out[NLENGTHS + 1];
    for (int64_t n = 1; n <= NLENGTHS; n++) run_scale(n, x, out);
    CHECK(atomic_load(&failures) == 0);
    tack_kernel_free(scale_k);
}

/* ---- template classes retired during launches ---- */

static const char *SHIFT =
    "def shift(s, x, out):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] * s.factor + s.offset\n";

#define BIG 20000
static tack_kernel *shift_k;
static atomic_ullong next_token = 1000;

/* Launches with a template class whose token the retirer may retire at any
 * moment, even while the launch runs the class's code. */
static int run_shift(uint64_t token, double factor, int64_t n, double *x, double *out) {
    tack_field f[2] = {{.name = "factor", .role = TACK_FIELD_CONSTANT, .value = tack_arg_float(factor)},
                       {.name = "offset", .role = TACK_FIELD_SCALAR, .value = tack_arg_float(0.5)}};
    tack_struct s = {token, "Shift", NULL, 2, f};
    tack_arg a[3];
    memset(&a[0], 0, sizeof a[0]);
    a[0].kind = TACK_ARG_STRUCT;
    a[0].tmpl = &s;
    a[1] = tack_arg_array(x, TACK_F64, 1, &n, 0);
    a[2] = tack_arg_array(out, TACK_F64, 1, &n, 1);
    for (int64_t i = 0; i < n; i++) out[i] = -1;
    tack_error err;
    if (tack_kernel_launch(shift_k, dev, a, 3, &err) != TACK_OK) {
        fail("shift", &err);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        if (out[i] != x[i] * factor + 0.5) {
            fail("shift: wrong result", NULL);
            return -1;
        }
    return 0;
}

static void *shift_launcher(void *arg) {
    (void)arg;
    double *x = malloc(BIG * sizeof *x), *out = malloc(BIG * sizeof *out);
    for (int i = 0; i < BIG; i++) x[i] = i;
    for (int it = 0; !atomic_load(&stop); it++) {
        uint64_t token = atomic_load(&next_token);
        run_shift(token, 1.0 + (double)(token % 4), BIG, x, out);
    }
    free(x);
    free(out);
    return NULL;
}

/* Retires the token in use and carries the retirement out at once (the
 * variant count runs pending retirements), while launches run its code. */
static void *retirer(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        uint64_t token = atomic_fetch_add(&next_token, 1);
        struct timespec d = {0, 200000};
        nanosleep(&d, NULL);
        tack_retire_class(token);
        tack_kernel_num_variants(shift_k, dev);
    }
    return NULL;
}

static void test_retire_during_launch(void) {
    shift_k = make(SHIFT);
    CHECK(shift_k != NULL);
    if (!shift_k) return;
    atomic_store(&failures, 0);
    atomic_store(&stop, 0);
    pthread_t th[3];
    pthread_create(&th[0], NULL, shift_launcher, NULL);
    pthread_create(&th[1], NULL, shift_launcher, NULL);
    pthread_create(&th[2], NULL, retirer, NULL);
    for (double end = now() + 1.0; now() < end;) {
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK(atomic_load(&failures) == 0);
    /* Everything retired is freed once no launch holds it (a launch that
     * read a token just before its retirement compiled it again). */
    for (uint64_t t = 1000; t <= atomic_load(&next_token); t++) tack_retire_class(t);
    CHECK(tack_kernel_num_variants(shift_k, dev) == 0);
    CHECK(tack_kernel_num_ir_templates(shift_k) == 0);
    tack_kernel_free(shift_k);
}

/* ---- stress: mixed dtypes and shapes, debug toggled, classes retired ---- */

static const char *AXPY =
    "def axpy(x, y, out, a):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] * a + y[i]\n";
static const char *ROWSUM =
    "def rowsum(m, out):\n"
    "    for i in range(m.shape[0]):\n"
    "        acc = m[i, 0] * 0\n"
    "        for j in range(m.shape[1]):\n"
    "            acc += m[i, j]\n"
    "        out[i] = acc\n";
static tack_kernel *axpy_k, *rowsum_k;

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int axpy_case(uint64_t *seed) {
    int64_t n = (int64_t)(rnd(seed) % 3000);
    int which = (int)(rnd(seed) % 3);
    tack_dtype dt = which == 0 ? TACK_F32 : which == 1 ? TACK_F64 : TACK_I32;
    size_t item = dt == TACK_F64 ? 8 : 4;
    char *x = malloc(n * item + 8), *y = malloc(n * item + 8), *out = malloc(n * item + 8);
    for (int64_t i = 0; i < n; i++) {
        if (dt == TACK_F32) ((float *)x)[i] = (float)i, ((float *)y)[i] = 1.5f;
        else if (dt == TACK_F64) ((double *)x)[i] = (double)i, ((double *)y)[i] = 1.5;
        else ((int32_t *)x)[i] = (int32_t)i, ((int32_t *)y)[i] = 7;
    }
    tack_arg a[4] = {tack_arg_array(x, dt, 1, &n, 0), tack_arg_array(y, dt, 1, &n, 0),
                     tack_arg_array(out, dt, 1, &n, 1),
                     dt == TACK_I32 ? tack_arg_int(3) : tack_arg_float(3.0)};
    tack_error err;
    int bad = 0;
    if (tack_kernel_launch(axpy_k, dev, a, 4, &err) != TACK_OK) {
        fail("axpy", &err);
        bad = 1;
    }
    for (int64_t i = 0; i < n && !bad; i++) {
        if (dt == TACK_F32) bad = ((float *)out)[i] != (float)i * 3.0f + 1.5f;
        else if (dt == TACK_F64) bad = ((double *)out)[i] != (double)i * 3.0 + 1.5;
        else bad = ((int32_t *)out)[i] != (int32_t)i * 3 + 7;
        if (bad) fail("axpy: wrong result", NULL);
    }
    free(x), free(y), free(out);
    return bad;
}

static int rowsum_case(uint64_t *seed) {
    int64_t shape[2] = {(int64_t)(rnd(seed) % 200), 1 + (int64_t)(rnd(seed) % 40)};
    int64_t n = shape[0] * shape[1];
    double *m = malloc((n + 1) * sizeof *m), *out = malloc((shape[0] + 1) * sizeof *out);
    for (int64_t i = 0; i < n; i++) m[i] = (double)(i % 17);
    tack_arg a[2] = {tack_arg_array(m, TACK_F64, 2, shape, 0),
                     tack_arg_array(out, TACK_F64, 1, shape, 1)};
    tack_error err;
    int bad = 0;
    if (tack_kernel_launch(rowsum_k, dev, a, 2, &err) != TACK_OK) {
        fail("rowsum", &err);
        bad = 1;
    }
    for (int64_t i = 0; i < shape[0] && !bad; i++) {
        double want = 0;
        for (int64_t j = 0; j < shape[1]; j++) want += m[i * shape[1] + j];
        if (out[i] != want) {
            fail("rowsum: wrong result", NULL);
            bad = 1;
        }
    }
    free(m), free(out);
    return bad;
}

static void *stress_launcher(void *arg) {
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)arg;
    double *x = malloc(BIG * sizeof *x), *out = malloc(BIG * sizeof *out);
    for (int i = 0; i < BIG; i++) x[i] = i;
    while (!atomic_load(&stop)) {
        switch (rnd(&seed) % 3) {
        case 0: axpy_case(&seed); break;
        case 1: rowsum_case(&seed); break;
        default: {
            uint64_t token = atomic_load(&next_token);
            run_shift(token, 2.0 + (double)(token % 3), 1 + (int64_t)(rnd(&seed) % BIG), x, out);
        }
        }
    }
    free(x);
    free(out);
    return NULL;
}

static void test_stress(void) {
    const char *env = getenv("TACK_STRESS_SECONDS");
    double seconds = env ? atof(env) : 2.0;
    axpy_k = make(AXPY);
    rowsum_k = make(ROWSUM);
    shift_k = make(SHIFT);
    CHECK(axpy_k && rowsum_k && shift_k);
    if (!axpy_k || !rowsum_k || !shift_k) return;
    atomic_store(&failures, 0);
    atomic_store(&stop, 0);
    pthread_t th[5];
    pthread_create(&th[0], NULL, debug_toggler, NULL);
    pthread_create(&th[1], NULL, retirer, NULL);
    for (intptr_t i = 2; i < 5; i++) pthread_create(&th[i], NULL, stress_launcher, (void *)i);
    for (double end = now() + seconds; now() < end;) {
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 5; i++) pthread_join(th[i], NULL);
    CHECK(atomic_load(&failures) == 0);
    tack_kernel_free(axpy_k);
    tack_kernel_free(rowsum_k);
    tack_kernel_free(shift_k);
}

/* ---- the host's lock let go around long runs ---- */

static const char *SPIN =
    "def spin(x, out, trips):\n"
    "    for i in range(x.shape[0]):\n"
    "        acc = x[i]\n"
    "        for j in range(trips):\n"
    "            acc = acc * 0.5 + 1.0\n"
    "        out[i] = acc\n";

static atomic_int hook_begins, hook_ends, hook_mismatches;
static int hook_token;

static void *count_begin(void) {
    atomic_fetch_add(&hook_begins, 1);
    return &hook_token;
}

static void count_end(void *state) {
    atomic_fetch_add(&hook_ends, 1);
    if (state != &hook_token) atomic_fetch_add(&hook_mismatches, 1);
}

/* One thread: a run is the kernel alone (a pool's hand-off to a worker
 * that the machine descheduled could make a tiny run long). */
static tack_device *dev1;

static int run_spin(tack_kernel *k, int64_t n, int64_t trips, float *x, float *out) {
    tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                     tack_arg_int(trips)};
    tack_error err;
    if (tack_kernel_launch(k, dev1, a, 3, &err) != TACK_OK) {
        fail("spin", &err);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        float acc = x[i];
        for (int64_t j = 0; j < trips; j++) acc = acc * 0.5f + 1.0f;
        if (out[i] != acc) {
            fail("spin: wrong result", NULL);
            return -1;
        }
    }
    return 0;
}

/* Hook calls made by `launches` launches of spin(n, trips). */
static int hooks_during(tack_kernel *k, int launches, int64_t n, int64_t trips, float *x,
                        float *out) {
    int before = atomic_load(&hook_begins);
    for (int i = 0; i < launches; i++)
        if (run_spin(k, n, trips, x, out)) break;
    return atomic_load(&hook_begins) - before;
}

static void test_release_around_long_runs(void) {
    enum { N = 4096 };
    float *x = malloc(N * sizeof *x), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++) x[i] = (float)i / N;
    tack_error err;
    dev1 = tack_device_create("cpu", 1, &err);
    tack_kernel *longk = make(SPIN), *tinyk = make(SPIN);
    CHECK(dev1 && longk && tinyk && x && out);
    if (!dev1 || !longk || !tinyk || !x || !out) goto done;
    atomic_store(&failures, 0);
    tack_set_compile_hooks(count_begin, count_end);
    /* Off (the default): only lowering and compiling call the hooks. */
    tack_set_release_threshold(0);
    CHECK(hooks_during(longk, 1, N, 2000, x, out) >= 1);
    CHECK(hooks_during(longk, 5, N, 2000, x, out) == 0);
    /* 1 us: a run of milliseconds lets go, once per launch. */
    tack_set_release_threshold(1000);
    CHECK(hooks_during(longk, 5, N, 2000, x, out) == 5);
    /* A new variant's first run lets go (its time is not known yet); a
     * tiny one's later runs keep the lock: of 2000 launches of 8 elements
     * and no inner trips, only the first few (a cold first run overstates
     * the time until timed runs correct it) and the odd sample that the
     * machine stalled let go. */
    /* The threshold between the two lengths by far (a tiny run takes well
     * under a microsecond, a few under the sanitizers; 8 x 50000 trips
     * about half a millisecond), so that neither check depends on how
     * fast or loaded the machine is (at 1 us, sanitizer builds on a busy
     * machine crossed it with tiny runs). */
    tack_set_release_threshold(50000);
    int tiny = hooks_during(tinyk, 2000, 8, 0, x, out);
    CHECK(tiny >= 1 && tiny <= 100);
    /* The same 8 iterations grow long (50000 trips): one of the first 16
     * runs is timed, and from then on they let go. */
    int grown = hooks_during(tinyk, 100, 8, 50000, x, out);
    CHECK(grown >= 100 - 2 * 16);
    CHECK(atomic_load(&hook_begins) == atomic_load(&hook_ends));
    CHECK(atomic_load(&hook_mismatches) == 0);
    CHECK(atomic_load(&failures) == 0);
done:
    tack_set_release_threshold(0);
    tack_set_compile_hooks(NULL, NULL);
    if (longk) tack_kernel_free(longk);
    if (tinyk) tack_kernel_free(tinyk);
    if (dev1) tack_device_free(dev1);
    free(x);
    free(out);
}

int main(void) {
    tack_error err;
    dev = tack_device_get("cpu", &err);
    test_debug_toggle();
    test_retire_during_launch();
    test_stress();
    test_release_around_long_runs();
    return CHECK_DONE();
}

/* test_conveniences.c - the C API behind issue 14's conveniences: a CPU
 * device's thread pool resized in place (variants kept, results right, a
 * launch racing the resize), tack_kernel_inspect's texts, and the version
 * and target strings of `python -m tack info`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tack.h"

static const char *SCALE =
    "def scale(x, out, a):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] * a\n";

#define N 100000 /* above the pool's grain: the launch is split */

static float xs[N], outs[N];

static int launch_scale(tack_kernel *k, tack_device *dev, float *x, float *out, double a) {
    int64_t n = N;
    for (int i = 0; i < N; i++) x[i] = (float)i, out[i] = -1;
    tack_arg args[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                        tack_arg_float(a)};
    tack_error err;
    if (tack_kernel_launch(k, dev, args, 3, &err) != TACK_OK) {
        fprintf(stderr, "launch: %s\n", err.message);
        return -1;
    }
    for (int i = 0; i < N; i++)
        if (out[i] != (float)i * (float)a) return -1;
    return 0;
}

static void test_resize_keeps_variants(void) {
    tack_error err;
    tack_device *dev = tack_device_create("cpu", 2, &err);
    tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(dev && k);
    CHECK(launch_scale(k, dev, xs, outs, 2.0) == 0);
    tack_stats before;
    tack_get_stats(&before);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    static const int counts[] = {1, 4, 3, 1, 2};
    for (int i = 0; i < 5; i++) {
        CHECK(tack_device_set_num_threads(dev, counts[i], &err) == TACK_OK);
        CHECK(tack_device_num_threads(dev) == counts[i]);
        char want[32];
        snprintf(want, sizeof want, "%d threads", counts[i]);
        CHECK(strstr(tack_device_description(dev), want) != NULL);
        CHECK(launch_scale(k, dev, xs, outs, 3.0) == 0);
    }
    tack_stats after;
    tack_get_stats(&after);
    CHECK(after.compiles == before.compiles);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    /* Refusals leave the pool as it was. */
    CHECK(tack_device_set_num_threads(dev, 0, &err) == TACK_ERR_VALUE);
    CHECK(strstr(err.message, "from 1 to 256, got 0") != NULL);
    CHECK(tack_device_set_num_threads(dev, 257, &err) == TACK_ERR_VALUE);
    CHECK(tack_device_num_threads(dev) == 2);
    tack_kernel_free(k);
    tack_device_free(dev);
}

/* Launches on one thread while another resizes the pool: every result is
 * right and nothing hangs. */
static tack_device *race_dev;
static tack_kernel *race_k;
static atomic_int race_stop, race_wrong, race_launches;

static void *race_launcher(void *arg) {
    (void)arg;
    static float x[N], out[N];
    while (!atomic_load(&race_stop)) {
        if (launch_scale(race_k, race_dev, x, out, 2.0)) atomic_fetch_add(&race_wrong, 1);
        atomic_fetch_add(&race_launches, 1);
    }
    return NULL;
}

static void test_resize_during_launches(void) {
    tack_error err;
    race_dev = tack_device_create("cpu", 2, &err);
    race_k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(race_dev && race_k);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, race_launcher, NULL) == 0);
    /* Resizes until the launcher has run a few launches through them (on
     * a loaded machine its first compile can outlast 200 resizes). */
    for (int i = 0; i < 200 || atomic_load(&race_launches) < 3; i++)
        CHECK(tack_device_set_num_threads(race_dev, 1 + i % 4, &err) == TACK_OK);
    atomic_store(&race_stop, 1);
    pthread_join(t, NULL);
    CHECK(atomic_load(&race_wrong) == 0);
    CHECK(tack_kernel_num_variants(race_k, race_dev) == 1);
    tack_kernel_free(race_k);
    tack_device_free(race_dev);
}

static void test_inspect(void) {
    tack_error err;
    tack_device *dev = tack_device_get("cpu", &err);
    tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(dev && k);
    int64_t n = 16;
    float x[16] = {0}, out[16];
    for (int i = 0; i < 16; i++) out[i] = 7;
    tack_arg args[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                        tack_arg_float(2.0)};
    char *text = NULL;
    CHECK(tack_kernel_inspect(k, dev, TACK_INSPECT_IR, args, 3, &text, &err) == TACK_OK);
    CHECK(text && strstr(text, "kernel scale(x: array f32, out: array f32, a: f32)"));
    free(text);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    CHECK(tack_kernel_inspect(k, dev, TACK_INSPECT_LLVM, args, 3, &text, &err) == TACK_OK);
    CHECK(text && strstr(text, "fmul") && strstr(text, "%out"));
    free(text);
    CHECK(tack_kernel_inspect(k, dev, TACK_INSPECT_ASM, args, 3, &text, &err) == TACK_OK);
    CHECK(text && strstr(text, "\"scale\"") && strstr(text, "mul"));
    free(text);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    for (int i = 0; i < 16; i++) CHECK(out[i] == 7); /* nothing ran */
    CHECK(tack_kernel_inspect(k, dev, (tack_inspect_kind)9, args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(text == NULL);
    CHECK(tack_kernel_inspect(k, dev, TACK_INSPECT_IR, args, 2, &text, &err) != TACK_OK);
    CHECK(text == NULL);
    tack_kernel_free(k);
}

static void test_info_strings(void) {
    tack_error err;
    tack_device *dev = tack_device_get("cpu", &err);
    CHECK(tack_llvm_version() && strchr(tack_llvm_version(), '.'));
    const char *target = dev ? tack_device_target(dev) : NULL;
    CHECK(target && strchr(target, ':') && strchr(strchr(target, ':') + 1, ':'));
}

/* Issue 22 item 5: per-kernel counters, launch timing only while asked,
 * and a kernel's own debug mode. */
static void test_kernel_stats_and_options(void) {
    tack_error err;
    tack_device *dev = tack_device_get("cpu", &err);
    tack_kernel *k = tack_kernel_create(SCALE, "stats.py", 1, NULL, NULL, &err);
    CHECK(dev && k);
    tack_stats before;
    tack_get_stats(&before);
    tack_kernel_stats s;
    tack_kernel_get_stats(k, &s);
    CHECK(!strcmp(s.name, "scale") && s.launches == 0 && s.compiles == 0 && s.launch_ns == 0);
    CHECK(launch_scale(k, dev, xs, outs, 2.0) == 0);
    CHECK(launch_scale(k, dev, xs, outs, 2.0) == 0);
    tack_kernel_get_stats(k, &s);
    CHECK(s.launches == 2 && s.compiles == 1 && s.lowerings == 1 && s.compile_ns > 0);
    CHECK(s.launch_ns == 0); /* not asked for */
    CHECK(!tack_get_launch_timing());
    tack_set_launch_timing(1);
    tack_set_launch_timing(1); /* nested asks */
    CHECK(launch_scale(k, dev, xs, outs, 3.0) == 0);
    tack_set_launch_timing(0);
    CHECK(tack_get_launch_timing());
    tack_set_launch_timing(0);
    CHECK(!tack_get_launch_timing());
    tack_kernel_get_stats(k, &s);
    uint64_t timed = s.launch_ns;
    CHECK(s.launches == 3 && timed > 0);
    CHECK(launch_scale(k, dev, xs, outs, 3.0) == 0);
    tack_kernel_get_stats(k, &s);
    CHECK(s.launch_ns == timed);
    /* listed among the live kernels; the process-wide count has its launches */
    int n = tack_get_kernel_stats(NULL, 0);
    tack_kernel_stats *all = calloc((size_t)n, sizeof *all);
    CHECK(all && tack_get_kernel_stats(all, n) == n && n >= 1);
    int found = 0;
    for (int i = 0; i < n; i++) found += !strcmp(all[i].name, "scale") && all[i].launches == 4;
    CHECK(found == 1);
    free(all);
    tack_stats after;
    tack_get_stats(&after);
    CHECK(after.launches - before.launches == 4);
    /* a freed kernel's launches stay counted */
    tack_kernel_free(k);
    tack_get_stats(&after);
    CHECK(after.launches - before.launches == 4);

    /* debug for one kernel: its template is the bounds-checked one */
    k = tack_kernel_create(SCALE, "stats.py", 1, NULL, NULL, &err);
    CHECK(k && !tack_get_debug() && !tack_kernel_debug(k));
    tack_kernel_set_debug(k, 1);
    CHECK(tack_kernel_debug(k));
    CHECK(launch_scale(k, dev, xs, outs, 2.0) == 0);
    char key[64];
    CHECK(tack_kernel_num_ir_templates(k) == 1 && tack_kernel_ir_template_key(k, 0, key, sizeof key) == 0 &&
          !strcmp(key, "debug"));
    tack_kernel_set_debug(k, -1);
    CHECK(!tack_kernel_debug(k));
    tack_kernel_free(k);
}

int main(void) {
    test_kernel_stats_and_options();
    test_resize_keeps_variants();
    test_resize_during_launches();
    test_inspect();
    test_info_strings();
    return CHECK_DONE();
}

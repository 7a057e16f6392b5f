/* c_launch.c - the cost of a warm launch through the C API: a prepared
 * handle (tack_launch_run) and a plain tack_kernel_launch, for scale on two
 * length-8 f32 arrays.  Build: see bench/suite.py or
 *   cc -O2 -Iinclude bench/c_launch.c build/libtack_static.a $(cat build/link_flags.txt) -lpthread -lm */
#include <stdio.h>
#include <time.h>

#include "tack.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
    tack_error err;
    tack_device *dev = tack_device_get("cpu", &err);
    tack_kernel *k = tack_kernel_create("def scale(x, out, a):\n"
                                        "    for i in range(x.shape[0]):\n"
                                        "        out[i] = x[i] * a\n",
                                        "scale.py", 1, NULL, NULL, &err);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    int64_t n = 8;
    tack_arg args[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                        tack_arg_float(2.0)};
    tack_launch *l = tack_launch_prepare(k, dev, args, 3, &err);
    if (!l) {
        puts(err.message);
        return 1;
    }
    enum { REPS = 1000000 };
    double best_handle = 1e9, best_launch = 1e9;
    for (int round = 0; round < 5; round++) {
        double t0 = now();
        for (int i = 0; i < REPS; i++) tack_launch_run(l, args, 3, &err);
        double t1 = now();
        for (int i = 0; i < REPS; i++) tack_kernel_launch(k, dev, args, 3, &err);
        double t2 = now();
        if ((t1 - t0) / REPS < best_handle) best_handle = (t1 - t0) / REPS;
        if ((t2 - t1) / REPS < best_launch) best_launch = (t2 - t1) / REPS;
    }
    printf("c-api prepared launch len8  %.1f ns  (target <= 100 ns: %s)\n", best_handle * 1e9,
           best_handle * 1e9 <= 100 ? "ok" : "MISSED");
    printf("c-api tack_kernel_launch    %.1f ns\n", best_launch * 1e9);
    printf("result check: out[7] = %g (expect 16)\n", out[7]);
    tack_launch_free(l);
    tack_kernel_free(k);
    return out[7] == 16 ? 0 : 1;
}

/* out[i] = x[i] * 2 on 2^16 f32, serially and as an OpenMP parallel loop:
 * the C reference for the parallel-launch figure of bench/suite.py.
 *
 *     gcc -O3 -march=native -fopenmp -ffp-contract=off bench/scale.c -o /tmp/s
 *     OMP_NUM_THREADS=2 /tmp/s
 *
 * Prints two medians in microseconds: the serial loop, and the OpenMP loop
 * (its arithmetic plus OpenMP's fork/join).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 16)
#define REPS 2001

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* noinline so the serial loop is not hoisted out of the timing loop */
__attribute__((noinline)) static void scale_serial(const float *x, float *out, float a, int n) {
    for (int i = 0; i < n; i++) out[i] = x[i] * a;
}

__attribute__((noinline)) static void scale_omp(const float *x, float *out, float a, int n) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) out[i] = x[i] * a;
}

static double median_us(void (*fn)(const float *, float *, float, int), const float *x, float *out) {
    static double t[REPS];
    for (int r = 0; r < 200; r++) fn(x, out, 2.0f, N);
    for (int r = 0; r < REPS; r++) {
        double t0 = omp_get_wtime();
        fn(x, out, 2.0f, N);
        t[r] = (omp_get_wtime() - t0) * 1e6;
    }
    qsort(t, REPS, sizeof t[0], cmp);
    return t[REPS / 2];
}

int main(void) {
    float *x = malloc(N * sizeof *x), *out = malloc(N * sizeof *out);
    if (!x || !out) return 1;
    for (int i = 0; i < N; i++) x[i] = (float)i;
    double serial = median_us(scale_serial, x, out);
    double par = median_us(scale_omp, x, out);
    if (out[N - 1] != 2.0f * (float)(N - 1)) return 1;
    printf("%.3f %.3f\n", serial, par);
    free(x);
    free(out);
    return 0;
}

/* STREAM-style triad a[i] = b[i] + s*c[i] on 2^25 doubles with OpenMP: the
 * memory-bandwidth reference for bench_foundation.py.
 *
 *     gcc -O3 -march=native -fopenmp bench/triad.c -o /tmp/triad && /tmp/triad
 *
 * Prints the best of 10 runs in GB/s, counting 24 bytes per element (two
 * loads and one store; write-allocate traffic is not counted).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1L << 25)
#define REPS 10

int main(void) {
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "triad: out of memory\n");
        return 1;
    }
    const double s = 3.0;
    /* first touch in parallel, with the same schedule as the timed loop */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < N; i++) {
        a[i] = 0.0;
        b[i] = (double)i;
        c[i] = 2.0;
    }
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < N; i++)
            a[i] = b[i] + s * c[i];
        double t = omp_get_wtime() - t0;
        if (t < best)
            best = t;
    }
    /* check the result so the loop cannot be dropped */
    for (long i = 0; i < N; i += N / 7)
        if (a[i] != (double)i + 6.0) {
            fprintf(stderr, "triad: wrong result at %ld\n", i);
            return 1;
        }
    printf("%.2f\n", 24.0 * (double)N / best / 1e9);
    free(a);
    free(b);
    free(c);
    return 0;
}

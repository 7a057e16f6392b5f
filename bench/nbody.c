/* One n-body step in f32 with softening, OpenMP over bodies, each body
 * summing the pull of all bodies in a sequential inner loop: the C reference
 * for bench/suite.py.
 *
 *     gcc -O3 -march=native -fopenmp -ffp-contract=off bench/nbody.c -o /tmp/nb -lm
 *     OMP_NUM_THREADS=2 /tmp/nb N DT REPS IN OUT
 *
 * IN holds pos (N x 3), vel (N x 3) and mass (N) as raw f32; OUT receives
 * new_pos and new_vel the same way.  Prints the best of REPS steps in
 * seconds.  The arithmetic matches the Python kernels operation for
 * operation (softening^2 is passed in precomputed as EPS2).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define EPS2 1e-4f /* softening 1e-2, squared */

static void step(int n, const float *pos, const float *vel, const float *mass,
                 float *new_pos, float *new_vel, float dt) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        float xi = pos[3 * i], yi = pos[3 * i + 1], zi = pos[3 * i + 2];
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        for (int j = 0; j < n; j++) {
            float dx = pos[3 * j] - xi;
            float dy = pos[3 * j + 1] - yi;
            float dz = pos[3 * j + 2] - zi;
            float r2 = dx * dx + dy * dy + dz * dz + EPS2;
            float inv_r = 1.0f / sqrtf(r2);
            float s = mass[j] * inv_r * inv_r * inv_r;
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        float vx = vel[3 * i] + ax * dt;
        float vy = vel[3 * i + 1] + ay * dt;
        float vz = vel[3 * i + 2] + az * dt;
        new_vel[3 * i] = vx;
        new_vel[3 * i + 1] = vy;
        new_vel[3 * i + 2] = vz;
        new_pos[3 * i] = xi + vx * dt;
        new_pos[3 * i + 1] = yi + vy * dt;
        new_pos[3 * i + 2] = zi + vz * dt;
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: nbody N DT REPS IN OUT\n");
        return 2;
    }
    int n = atoi(argv[1]);
    float dt = strtof(argv[2], NULL);
    int reps = atoi(argv[3]);
    size_t nin = (size_t)n * 7, nout = (size_t)n * 6;
    float *in = malloc(sizeof(float) * nin), *out = malloc(sizeof(float) * nout);
    FILE *f = fopen(argv[4], "rb");
    if (!in || !out || !f || fread(in, sizeof(float), nin, f) != nin) {
        fprintf(stderr, "nbody: cannot read %s\n", argv[4]);
        return 1;
    }
    fclose(f);
    const float *pos = in, *vel = in + 3 * n, *mass = in + 6 * n;
    float *new_pos = out, *new_vel = out + 3 * n;
    step(n, pos, vel, mass, new_pos, new_vel, dt); /* warm */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
        step(n, pos, vel, mass, new_pos, new_vel, dt);
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    f = fopen(argv[5], "wb");
    if (!f || fwrite(out, sizeof(float), nout, f) != nout) return 1;
    fclose(f);
    printf("%.6f\n", best);
    free(in);
    free(out);
    return 0;
}

/* cuda_floor.c - the floors under Tack's CUDA figures, with the driver API
 * alone:
 *
 *   cuda_floor launch PTX ENTRY REPS   a warm launch of ENTRY (Tack's scale
 *       kernel, from tack.cuda.compile: the pack by value and two device
 *       pointers) over 8 items on a non-blocking stream, + cuStreamSynchronize,
 *       in a loop: microseconds per launch (the driver work Tack's dispatch
 *       does, which it adds its bookkeeping to)
 *   cuda_floor launch PTX ENTRY REPS queued   the same launches with one
 *       cuStreamSynchronize after each round of REPS instead of one per
 *       launch: microseconds per launch queued back to back (the floor
 *       under Tack's queued launches)
 *   cuda_floor copy N REPS            device-to-device copy of N f32
 *       (cuMemcpyDtoD, what cudaMemcpy D2D runs): GB/s counting read + write
 *
 * Built on the GPU machine by bench/gpu/check.sh:
 *     cc -O2 bench/gpu/cuda_floor.c -I$CUDA/include -L$CUDA/lib64/stubs -lcuda
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CK(call)                                                              \
    do {                                                                      \
        CUresult e_ = (call);                                                 \
        if (e_ != CUDA_SUCCESS) {                                             \
            const char *n_ = "?";                                             \
            cuGetErrorName(e_, &n_);                                          \
            fprintf(stderr, "%s failed: %s\n", #call, n_);                    \
            return 1;                                                         \
        }                                                                     \
    } while (0)

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(n + 1);
    if (s && fread(s, 1, n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_floor launch PTX ENTRY REPS [queued] | copy N REPS\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    if (!strcmp(argv[1], "launch") && argc >= 5) {
        char *ptx = slurp(argv[2]);
        if (!ptx) {
            fprintf(stderr, "cannot read %s\n", argv[2]);
            return 1;
        }
        int reps = atoi(argv[4]);
        int queued = argc >= 6 && !strcmp(argv[5], "queued");
        CUmodule mod;
        CUfunction fn;
        CK(cuModuleLoadData(&mod, ptx));
        CK(cuModuleGetFunction(&fn, mod, argv[3]));
        CUdeviceptr x, out;
        CK(cuMemAlloc(&x, 64));
        CK(cuMemAlloc(&out, 64));
        long long pack[8] = {0, 1, 8, 1, 1, 0, 0, 0x40000000}; /* a = 2.0f */
        void *params[3] = {pack, &x, &out};
        CUstream stream;
        CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        for (int i = 0; i < 1000; i++) {
            CK(cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, stream, params, NULL));
            CK(cuStreamSynchronize(stream));
        }
        double best = 1e30;
        for (int round = 0; round < 5; round++) {
            double t = now();
            for (int i = 0; i < reps; i++) {
                CK(cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, stream, params, NULL));
                if (!queued) CK(cuStreamSynchronize(stream));
            }
            if (queued) CK(cuStreamSynchronize(stream));
            double us = (now() - t) / reps * 1e6;
            if (us < best) best = us;
        }
        printf("%.3f\n", best);
        return 0;
    }
    if (!strcmp(argv[1], "copy") && argc >= 4) {
        size_t n = strtoull(argv[2], NULL, 10), bytes = n * 4;
        int reps = atoi(argv[3]);
        CUdeviceptr a, b;
        CK(cuMemAlloc(&a, bytes));
        CK(cuMemAlloc(&b, bytes));
        CK(cuMemsetD8(a, 1, bytes));
        CK(cuMemcpyDtoD(b, a, bytes));
        CK(cuCtxSynchronize());
        double best = 1e30;
        for (int i = 0; i < reps; i++) {
            double t = now();
            CK(cuMemcpyDtoD(b, a, bytes));
            CK(cuCtxSynchronize());
            t = now() - t;
            if (t < best) best = t;
        }
        printf("%.1f\n", 2.0 * bytes / best / 1e9);
        return 0;
    }
    fprintf(stderr, "usage: cuda_floor launch PTX ENTRY REPS [queued] | copy N REPS\n");
    return 2;
}

/* opencl_launch.c - a warm launch through Tack's OpenCL driver
 * (opencl_launch_pack: the pack, the arguments, enqueue, finish) beside the
 * bare calls on the same kernel (bench/opencl_floor.c's loop), alternating
 * in blocks in one process so both see the same machine load; prints the
 * best block of each.  Build by hand (after `make build`):
 *
 *     cc -O2 -Iinclude -Isrc bench/opencl_launch.c build/libtack_static.a \
 *        $(cat build/link_flags.txt) -lpthread -lm -o /tmp/opencl_launch && /tmp/opencl_launch
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/opencl/opencl.h"

static const char *SRC =
    "typedef struct { long w[8]; } tack_pack;\n"
    "__kernel void tack_scale(tack_pack p, __global const float *x, __global float *out) {\n"
    "    long start = p.w[0], step = p.w[1], count = p.w[2];\n"
    "    float a = as_float((uint)p.w[7]);\n"
    "    for (long k = get_global_id(0); k < count; k += get_global_size(0)) {\n"
    "        long i = start + k * step;\n"
    "        out[i] = x[i] * a;\n"
    "    }\n"
    "}\n";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int blocks = argc > 1 ? atoi(argv[1]) : 20, reps = 500;
    tack_error err;
    backend *b;
    if (opencl_open(0, 0, &b, &err)) {
        printf("%s\n", err.message);
        return 0;
    }
    ir_func *f = ir_func_new();
    f->name = "scale";
    f->nparams = 3;
    f->params = arena_alloc(&f->mem, 3 * sizeof *f->params);
    f->params[0] = (ir_param){.name = "x", .role = ROLE_ARRAY, .type = TACK_F32};
    f->params[1] = (ir_param){.name = "out", .role = ROLE_ARRAY, .type = TACK_F32};
    f->params[2] = (ir_param){.name = "a", .role = ROLE_SCALAR, .type = TACK_F32};
    backend_code *c;
    void *x, *out;
    if (opencl_code_from_source(b, f, SRC, "tack_scale", &c, &err) ||
        opencl_mem_alloc(b, 64, &x, &err) || opencl_mem_alloc(b, 64, &out, &err)) {
        printf("%s\n", err.message);
        return 1;
    }
    float a = 2.0f;
    uint32_t abits;
    memcpy(&abits, &a, 4);
    uint64_t slots[3] = {(uintptr_t)x, (uintptr_t)out, abits};
    backend_call call = {.kernel_name = "scale", .slots = slots, .nparams = 3};
    const opencl_api *cl = b->cl;
    double best_tack = 1e9, best_raw = 1e9;
    for (int blk = 0; blk < blocks; blk++) {
        double t0 = now();
        for (int r = 0; r < reps; r++) {
            int64_t pack[8] = {0, 1, 8, 1, 1, (int64_t)slots[0], (int64_t)slots[1],
                               (int64_t)slots[2]};
            if (opencl_launch_pack(b, c, &call, pack, &err)) {
                printf("%s\n", err.message);
                return 1;
            }
        }
        double t = (now() - t0) / reps;
        if (t < best_tack) best_tack = t;

        t0 = now();
        cl_mem mx = x, mo = out;
        size_t global = 8;
        for (int r = 0; r < reps; r++) {
            int64_t pack[8] = {0, 1, 8, 1, 1, 0, 0, (int64_t)abits};
            cl->SetKernelArg(c->kernel, 0, sizeof pack, pack);
            cl->SetKernelArg(c->kernel, 1, sizeof mx, &mx);
            cl->SetKernelArg(c->kernel, 2, sizeof mo, &mo);
            cl->EnqueueNDRangeKernel(b->queue, c->kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
            cl->Finish(b->queue);
        }
        t = (now() - t0) / reps;
        if (t < best_raw) best_raw = t;
    }
    printf("%s\nwarm launch, 8 items, best of %d blocks of %d: tack %.1f us, bare calls %.1f us\n",
           opencl_describe(b), blocks, reps, best_tack * 1e6, best_raw * 1e6);
    opencl_release(b, c);
    opencl_mem_free(b, x);
    opencl_mem_free(b, out);
    ir_func_free(f);
    opencl_close(b);
    return 0;
}

/* opencl_floor.c - the floor under a warm OpenCL launch: a hand-written
 * loop of clSetKernelArg (the pack by value and two buffers, as Tack's
 * kernels take them) + clEnqueueNDRangeKernel + clFinish for an 8-item
 * range, on the first device of the first platform; then the same calls
 * queued without the wait (issue 30.2: the floor under
 * bench_launch_queue.py's queued figure).  Compare with the
 * "warm launch" line test_opencl prints (Tack's driver: the same calls
 * plus its bookkeeping).  Build by hand:
 *
 *     cc -O2 bench/opencl_floor.c -lOpenCL -o /tmp/opencl_floor && /tmp/opencl_floor [REPS]
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

#define CK(call)                                                       \
    do {                                                               \
        cl_int e_ = (call);                                            \
        if (e_ != CL_SUCCESS) {                                        \
            fprintf(stderr, "%s failed: %d\n", #call, (int)e_);        \
            return 1;                                                  \
        }                                                              \
    } while (0)

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 2000;
    cl_platform_id plat;
    cl_device_id dev;
    cl_int e;
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    CK(e);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    CK(e);
    cl_program p = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &e);
    CK(e);
    CK(clBuildProgram(p, 1, &dev, "", NULL, NULL));
    cl_kernel k = clCreateKernel(p, "tack_scale", &e);
    CK(e);
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &e);
    CK(e);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &e);
    CK(e);
    float a = 2.0f;
    cl_long pack[8] = {0, 1, 8, 1, 1, 0, 0, 0};
    memcpy(&pack[7], &a, sizeof a);
    size_t global = 8;
    for (int r = -1; r < reps; r++) {
        static double t0;
        if (r == 0) t0 = now(); /* the first launch is warm-up */
        CK(clSetKernelArg(k, 0, sizeof pack, pack));
        CK(clSetKernelArg(k, 1, sizeof x, &x));
        CK(clSetKernelArg(k, 2, sizeof out, &out));
        CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        CK(clFinish(q));
        if (r == reps - 1) printf("floor: %.1f us per launch (%d launches)\n",
                                  (now() - t0) / reps * 1e6, reps);
    }
    /* Queued (issue 30.2): the same calls without the wait, one clFinish
     * at the end; with the event Tack keeps per launch (released a ring's
     * length later, after a status check) and a clFlush, as launch.c does. */
    for (int with_event = 0; with_event < 2; with_event++) {
        cl_event ring[32] = {0};
        double t0 = now(), t1;
        for (int r = 0; r < reps; r++) {
            CK(clSetKernelArg(k, 0, sizeof pack, pack));
            CK(clSetKernelArg(k, 1, sizeof x, &x));
            CK(clSetKernelArg(k, 2, sizeof out, &out));
            cl_event *ev = with_event ? &ring[r % 32] : NULL;
            if (ev && *ev) {
                cl_int st;
                CK(clGetEventInfo(*ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
                CK(clReleaseEvent(*ev));
            }
            CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, ev));
            if (with_event) CK(clFlush(q));
        }
        t1 = now();
        CK(clFinish(q));
        for (int i = 0; i < 32; i++)
            if (ring[i]) clReleaseEvent(ring[i]);
        printf("floor queued%s: %.1f us per launch to queue, %.1f with the final clFinish\n",
               with_event ? " (event ring, clFlush)" : "", (t1 - t0) / reps * 1e6,
               (now() - t0) / reps * 1e6);
    }
    clReleaseMemObject(x);
    clReleaseMemObject(out);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}

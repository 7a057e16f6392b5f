/* gpu_emit_run.c - runs every test kernel (gpu_cases.h) twice: through the
 * public C API on the CPU backend, and as emitted OpenCL C on the first
 * OpenCL device (PoCL here), from the same inputs; then compares every
 * array element.  Two programs from this file: PoCL brings its own LLVM,
 * which must not share a process with the CPU backend's, so gpu_emit_cl
 * (built with GPU_RUN_OPENCL, no LLVM linked) runs the OpenCL side and
 * writes each case's arrays to a folder, and gpu_emit_run runs it, then
 * the CPU side, and compares.  Floats compare bitwise (any NaN equals any NaN) except
 * for transcendental functions, which may differ by a few ulp between
 * math libraries.  Built only where OpenCL is found; with no OpenCL
 * device it says "skipped" and passes.  libtack itself never links
 * OpenCL. */
#ifdef GPU_RUN_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/gpu/dialect.h"
#include "gpu_cases.h"
#include "gpu_lower.h"

static int failures;

/* Elements of an argument's buffer (a strided view's reach more). */
static int64_t elems(const gl_argspec *s) { return gl_elems(s); }

static size_t nbytes(const gl_argspec *s) { return (size_t)elems(s) * tack_dtype_size(s->dtype); }

/* A case's inputs: every array initialized as gpu_cases.h says. */
static void make_inputs(const gl_case *c, void **data) {
    for (int i = 0; i < c->nargs; i++) {
        const gl_argspec *s = &c->a[i];
        data[i] = NULL;
        if (!s->is_array) continue;
        size_t sz = tack_dtype_size(s->dtype);
        data[i] = calloc(1, nbytes(s) + 8);
        for (int64_t k = 0; k < elems(s); k++) gl_fill((char *)data[i] + k * sz, s->dtype, s->init, k);
    }
}

#ifdef GPU_RUN_OPENCL
static cl_context ctx;
static cl_command_queue queue;
static cl_device_id device;

static int cl_fail(const gl_case *c, const char *what, cl_int rc) {
    fprintf(stderr, "%s: OpenCL %s failed (%d)\n", c->name, what, (int)rc);
    failures++;
    return -1;
}

/* The OpenCL run: emitted source, the pack, one buffer per array. */
static int run_gpu(const gl_case *c, void **data, int64_t *errors) {
    tack_arg args[16];
    for (int i = 0; i < c->nargs; i++) {
        const gl_argspec *s = &c->a[i];
        args[i] = s->is_array ? gl_view(s, data[i]) : s->scalar;
    }
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    tack_error err;
    ir_func *f = gl_variant(c->src, &ast, args, c->nargs, c->debug, slots, dims, &err);
    if (!f) {
        fprintf(stderr, "%s: %s\n", c->name, err.message);
        failures++;
        arena_free(&ast);
        return -1;
    }
    char *src = NULL;
    int64_t pack[GPU_PACK_SCALARS + TACK_MAX_PARAMS];
    int rc = -1;
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    cl_mem bufs[TACK_MAX_PARAMS] = {0};
    if (gpu_emit(f, &gpu_dialect_opencl, "tk_entry", &src, &err) ||
        gpu_pack_fill(f, slots, (const int64_t(*)[TACK_MAX_NDIM])dims, NULL, pack, &err)) {
        fprintf(stderr, "%s: %s\n", c->name, err.message);
        failures++;
        goto done;
    }
    if (getenv("GPU_RUN_DUMP") && !strcmp(getenv("GPU_RUN_DUMP"), c->name)) puts(src);
    cl_int e;
    prog = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &e);
    if (!prog) {
        cl_fail(c, "clCreateProgramWithSource", e);
        goto done;
    }
    if ((e = clBuildProgram(prog, 1, &device, gpu_dialect_opencl.build_options, NULL, NULL))) {
        char log[16384] = "";
        clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "%s: build failed:\n%s\n", c->name, log);
        cl_fail(c, "clBuildProgram", e);
        goto done;
    }
    kern = clCreateKernel(prog, "tk_entry", &e);
    if (!kern) {
        cl_fail(c, "clCreateKernel", e);
        goto done;
    }
    if ((e = clSetKernelArg(kern, 0, (size_t)gpu_pack_words(f) * 8, pack))) {
        cl_fail(c, "clSetKernelArg(pack)", e);
        goto done;
    }
    int64_t extents[TACK_MAX_PARAMS * TACK_MAX_NDIM] = {0};
    for (int p = 0; p < f->nparams; p++)
        for (int d = 0; d < TACK_MAX_NDIM; d++) extents[p * TACK_MAX_NDIM + d] = dims[p][d];
    for (int p = 0, argi = 1; p < f->nparams; p++) {
        if (f->params[p].role != ROLE_ARRAY) continue;
        void *host;
        size_t bytes;
        if (p == f->debug_errors) host = errors, bytes = DEBUG_ERR_LEN * 8;
        else if (p == f->debug_extents) host = extents, bytes = (size_t)f->nparams * TACK_MAX_NDIM * 8;
        else host = data[p], bytes = (size_t)elems(&c->a[p]) * tack_dtype_size(c->a[p].dtype);
        /* Whole 8-byte words: sub-word atomics touch the word around an element. */
        size_t alloc = (bytes + 7) / 8 * 8;
        bufs[p] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, alloc ? alloc : 8, NULL, &e);
        if (!bufs[p]) {
            cl_fail(c, "clCreateBuffer", e);
            goto done;
        }
        if (bytes && (e = clEnqueueWriteBuffer(queue, bufs[p], CL_TRUE, 0, bytes, host, 0, NULL, NULL))) {
            cl_fail(c, "clEnqueueWriteBuffer", e);
            goto done;
        }
        if ((e = clSetKernelArg(kern, argi++, sizeof(cl_mem), &bufs[p]))) {
            cl_fail(c, "clSetKernelArg", e);
            goto done;
        }
    }
    /* OpenCL's dialect runs one iteration per work item (a covering grid),
     * the innermost index on dimension 0 (gpu.h).  Each size is rounded up
     * to the small work-groups' multiple, so items past the range meet the
     * bound check in every dimension. */
    int nd = 1 + f->ninner;
    int64_t ext[3] = {pack[GPU_PACK_COUNT], 1, 1};
    if (nd == 2) ext[0] = pack[GPU_PACK_INNER0], ext[1] = pack[GPU_PACK_COUNT];
    if (nd == 3)
        ext[0] = pack[GPU_PACK_INNER1], ext[1] = pack[GPU_PACK_INNER0], ext[2] = pack[GPU_PACK_COUNT];
    size_t global[3], local[3] = {4, 2, 2};
    int empty = 0;
    for (int d = 0; d < 3; d++) {
        if (d >= nd) ext[d] = 1, local[d] = 1;
        empty |= ext[d] <= 0;
        global[d] = ext[d] > 0 ? ((size_t)ext[d] + local[d] - 1) / local[d] * local[d] : 0;
    }
    if (!empty && (e = clEnqueueNDRangeKernel(queue, kern, (cl_uint)nd, NULL, global, local, 0,
                                              NULL, NULL))) {
        cl_fail(c, "clEnqueueNDRangeKernel", e);
        goto done;
    }
    for (int p = 0; p < f->nparams; p++) {
        if (!bufs[p]) continue;
        void *host = p == f->debug_errors ? (void *)errors : p < c->nargs ? data[p] : NULL;
        size_t bytes = p == f->debug_errors ? DEBUG_ERR_LEN * 8
                       : p < c->nargs ? (size_t)elems(&c->a[p]) * tack_dtype_size(c->a[p].dtype) : 0;
        if (host && bytes &&
            (e = clEnqueueReadBuffer(queue, bufs[p], CL_TRUE, 0, bytes, host, 0, NULL, NULL))) {
            cl_fail(c, "clEnqueueReadBuffer", e);
            goto done;
        }
    }
    rc = 0;
done:
    for (int p = 0; p < TACK_MAX_PARAMS; p++)
        if (bufs[p]) clReleaseMemObject(bufs[p]);
    if (kern) clReleaseKernel(kern);
    if (prog) clReleaseProgram(prog);
    free(src);
    ir_func_free(f);
    arena_free(&ast);
    return rc;
}

/* gpu_emit_cl DIR [FILTER]: each case's arrays after the OpenCL run, then
 * debug mode's errors record, into DIR/<case>.bin (none if it failed). */
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_emit_cl DIR [FILTER]\n");
        return 2;
    }
    cl_platform_id plat;
    cl_uint np = 0;
    if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || np == 0 ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        printf("no OpenCL device: skipped\n");
        return 3;
    }
    cl_int e;
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
    queue = ctx ? clCreateCommandQueue(ctx, device, 0, &e) : NULL;
    if (!queue) {
        printf("no OpenCL queue (%d): skipped\n", (int)e);
        return 3;
    }
    static gl_case cases[128];
    int n = gl_cases(cases, 128);
    for (int i = 0; i < n; i++) {
        const gl_case *c = &cases[i];
        if (argc > 2 && !strstr(c->name, argv[2])) continue;
        void *data[16];
        make_inputs(c, data);
        int64_t errors[DEBUG_ERR_LEN];
        for (int k = 0; k < DEBUG_ERR_LEN; k++) errors[k] = 0;
        errors[DEBUG_ERR_FIRST] = errors[DEBUG_ERR_INDEX] = INT64_MAX;
        if (run_gpu(c, data, errors) == 0) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.bin", argv[1], c->name);
            FILE *fp = fopen(path, "wb");
            if (fp) {
                for (int a = 0; a < c->nargs; a++)
                    if (c->a[a].is_array) fwrite(data[a], 1, nbytes(&c->a[a]), fp);
                fwrite(errors, sizeof errors[0], DEBUG_ERR_LEN, fp);
                fclose(fp);
            }
        }
        for (int a = 0; a < c->nargs; a++) free(data[a]);
    }
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    return failures ? 1 : 0;
}

#else /* the comparator */

/* ulp distance between two floats of the same sign. */
static int64_t ulps(double a, double b, int is32) {
    if (is32) {
        float x = (float)a, y = (float)b;
        int32_t ix, iy;
        memcpy(&ix, &x, 4);
        memcpy(&iy, &y, 4);
        if ((ix < 0) != (iy < 0)) return x == y ? 0 : INT64_MAX;
        return ix > iy ? (int64_t)ix - iy : (int64_t)iy - ix;
    }
    int64_t ix, iy;
    memcpy(&ix, &a, 8);
    memcpy(&iy, &b, 8);
    if ((ix < 0) != (iy < 0)) return a == b ? 0 : INT64_MAX;
    return ix > iy ? ix - iy : iy - ix;
}

/* Compares array p of case c; returns the number of differences. */
static int compare(const gl_case *c, int p, const void *cpu, const void *gpu) {
    const gl_argspec *s = &c->a[p];
    int64_t n = elems(s);
    size_t sz = tack_dtype_size(s->dtype);
    int bad = 0;
    for (int64_t k = 0; k < n; k++) {
        const char *x = (const char *)cpu + k * sz, *y = (const char *)gpu + k * sz;
        int same;
        char text[160];
        if (s->dtype == TACK_F32 || s->dtype == TACK_F64) {
            double a, b;
            if (s->dtype == TACK_F32) {
                float fa, fb;
                memcpy(&fa, x, 4);
                memcpy(&fb, y, 4);
                a = fa, b = fb;
            } else {
                memcpy(&a, x, 8);
                memcpy(&b, y, 8);
            }
            same = (a != a && b != b) || !memcmp(x, y, sz);
            /* Transcendental results: a few ulp apart, the same NaN-ness. */
            if (!same && c->tolerant && a == a && b == b)
                same = ulps(a, b, s->dtype == TACK_F32) <= 4;
            snprintf(text, sizeof text, "cpu %.17g gpu %.17g", a, b);
        } else {
            same = !memcmp(x, y, sz);
            uint64_t a = 0, b = 0;
            memcpy(&a, x, sz);
            memcpy(&b, y, sz);
            snprintf(text, sizeof text, "cpu 0x%llx gpu 0x%llx", (unsigned long long)a,
                     (unsigned long long)b);
        }
        if (!same) {
            if (bad < 6) {
                int64_t cols = s->ndim > 1 ? elems(s) / s->shape[0] : 1;
                fprintf(stderr, "  %s: array %d element %lld (row %lld col %lld): %s\n", c->name, p,
                        (long long)k, (long long)(k / cols), (long long)(k % cols), text);
            }
            bad++;
        }
    }
    return bad;
}

static void run_case(const gl_case *c, tack_device *cpu, const char *dir) {
    void *cd[16], *gd[16] = {0};
    tack_arg args[16];
    make_inputs(c, cd);
    for (int i = 0; i < c->nargs; i++) {
        const gl_argspec *s = &c->a[i];
        args[i] = s->is_array ? gl_view(s, cd[i]) : s->scalar;
    }
    tack_error err;
    tack_kernel *k = tack_kernel_create(c->src, "kernels.py", 1, gl_resolve, NULL, &err);
    tack_set_debug(c->debug);
    tack_status cst = k ? tack_kernel_launch(k, cpu, args, c->nargs, &err) : err.status;
    tack_set_debug(0);
    int bad = 0;
    if (cst != TACK_OK && !(c->debug && cst == TACK_ERR_INDEX)) {
        fprintf(stderr, "%s: the CPU run failed: %s\n", c->name, err.message);
        bad++;
    }
    /* The OpenCL side's arrays, as gpu_emit_cl wrote them. */
    int64_t errors[DEBUG_ERR_LEN];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.bin", dir, c->name);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "%s: no OpenCL result (see gpu_emit_cl's messages)\n", c->name);
        bad++;
    } else {
        for (int i = 0; i < c->nargs; i++)
            if (c->a[i].is_array) {
                gd[i] = calloc(1, nbytes(&c->a[i]) + 8);
                if (fread(gd[i], 1, nbytes(&c->a[i]), fp) != nbytes(&c->a[i])) bad++;
            }
        if (fread(errors, sizeof errors[0], DEBUG_ERR_LEN, fp) != DEBUG_ERR_LEN) bad++;
        fclose(fp);
    }
    if (!bad) {
        int contended = !strncmp(c->name, "contend", 7);
        for (int i = 0; i < c->nargs; i++) {
            if (!c->a[i].is_array) continue;
            if (contended && i != 0) continue;
            bad += compare(c, i, cd[i], gd[i]);
        }
        if (c->debug) {
            /* The CPU's message names the launch index and the indices. */
            char want[160];
            snprintf(want, sizeof want, "(launch index %lld)", (long long)errors[DEBUG_ERR_INDEX]);
            int ok = cst == TACK_ERR_INDEX && strstr(err.message, want) &&
                     errors[DEBUG_ERR_FIRST] == errors[DEBUG_ERR_INDEX];
            char idx[96] = "index (";
            for (int d = 0; d < errors[DEBUG_ERR_NDIM] && d < TACK_MAX_NDIM; d++)
                snprintf(idx + strlen(idx), sizeof idx - strlen(idx), "%s%lld", d ? ", " : "",
                         (long long)errors[DEBUG_ERR_VALUES + d]);
            ok = ok && strstr(err.message, idx);
            if (!ok) {
                fprintf(stderr, "  %s: GPU record: first %lld index %lld site %lld %s); CPU: %s\n",
                        c->name, (long long)errors[DEBUG_ERR_FIRST], (long long)errors[DEBUG_ERR_INDEX],
                        (long long)errors[DEBUG_ERR_SITE], idx, err.message);
                bad++;
            }
        }
    }
    printf("%-24s %s\n", c->name, bad ? "DIFFERS" : "ok");
    if (bad) failures++;
    if (k) tack_kernel_free(k);
    for (int i = 0; i < c->nargs; i++) free(cd[i]), free(gd[i]);
}

int main(int argc, char **argv) {
    char dir[] = "/tmp/tack_gpu_run_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", GPU_EMIT_CL, dir, argc > 1 ? argv[1] : "");
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 3) {
        rmdir(dir);
        return 0; /* no OpenCL device: skipped */
    }
    tack_error err;
    tack_device *cpu = tack_device_get("cpu", &err);
    if (!cpu) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    static gl_case cases[128];
    int n = gl_cases(cases, 128);
    for (int i = 0; i < n; i++)
        if (argc < 2 || strstr(cases[i].name, argv[1])) {
            run_case(&cases[i], cpu, dir);
            char path[1024];
            snprintf(path, sizeof path, "%s/%s.bin", dir, cases[i].name);
            remove(path);
        }
    rmdir(dir);
    printf("%d case%s differ\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
#endif

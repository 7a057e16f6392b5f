/* test_cuda.c - the CUDA backend without a GPU.
 *
 *   - tack_device_get("cuda") where there is no driver (or no device):
 *     TACK_ERR_DEVICE saying what is missing;
 *   - every GPU test kernel (gpu_cases.h) through tack_kernel_generate:
 *     CUDA C, OpenCL C, and PTX for sm_80 and sm_90 from NVRTC, each PTX
 *     checked by ptxas (skipped, saying so, where NVRTC or ptxas is absent);
 *   - generation's refusals (targets, architectures, ranges, NVRTC's log);
 *   - the disk-cache record: round trip, and damaged records refused;
 *   - the backend over a stand-in driver (cuda_driver_set_for_testing):
 *     open and caps, build (the PTX the driver is handed), artifact and
 *     load without NVRTC, the launch's parameters and grid, memory, driver
 *     errors named with the call and CUDA's error name, and a whole launch
 *     through the runtime with device arrays. */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/cuda.h"
#include "backend/gpu/gpu.h"
#include "check.h"
#include "gpu_cases.h"
#include "gpu_lower.h"

static int have_nvrtc;
static char ptxas[512];

/* ---- no driver ---------------------------------------------------------- */

static void test_no_driver(void) {
    const char *why = NULL;
    const cuda_driver_api *cu = cuda_driver_load(&why);
    tack_error err;
    tack_device *d = tack_device_get("cuda", &err);
    if (d) {
        printf("a CUDA device is present (%s): the no-driver checks are skipped\n",
               tack_device_description(d));
        return;
    }
    printf("tack.device(\"cuda\"): %s\n", err.message);
    CHECK(err.status == TACK_ERR_DEVICE);
    if (!cu) CHECK(strstr(err.message, "no CUDA driver: libcuda.so.1 could not be loaded") != NULL);
    else CHECK(strstr(err.message, "CUDA") != NULL);
    /* The same answer on a second call, and for a numbered device. */
    CHECK(!tack_device_get("cuda", &err) && err.status == TACK_ERR_DEVICE);
    CHECK(!tack_device_create("cuda:1", 0, &err) && err.status == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "cuda:1") != NULL);
}

/* ---- generation of every test kernel ------------------------------------- */

static void fill_args(const gl_case *c, tack_arg *args) {
    static char dummy[64] __attribute__((aligned(16)));
    for (int i = 0; i < c->nargs; i++) {
        const gl_argspec *s = &c->a[i];
        if (!s->is_array) args[i] = s->scalar;
        else args[i] = gl_view(s, dummy);
    }
}

/* ptxas on `ptx`: 0 when it accepts it (its words on stderr otherwise). */
static int run_ptxas(const char *ptx, const char *arch, const char *what) {
    char path[64], out[64];
    snprintf(path, sizeof path, "/tmp/tack_test_cuda_%d.ptx", (int)getpid());
    snprintf(out, sizeof out, "/tmp/tack_test_cuda_%d.cubin", (int)getpid());
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fputs(ptx, fp);
    fclose(fp);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' -arch=%s -o %s %s 2>&1", ptxas, arch, out, path);
    FILE *pp = popen(cmd, "r");
    char msg[4096];
    size_t n = pp ? fread(msg, 1, sizeof msg - 1, pp) : 0;
    msg[n] = 0;
    int rc = pp ? pclose(pp) : -1;
    if (rc) fprintf(stderr, "%s (%s): ptxas says:\n%s\n", what, arch, msg);
    remove(path);
    remove(out);
    return rc;
}

static int generated, ptx_made, ptx_checked;

static void generate_case(const gl_case *c) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(c->src, "kernels.py", 1, gl_resolve, NULL, &err);
    CHECK(k != NULL);
    if (!k) {
        fprintf(stderr, "%s: %s\n", c->name, err.message);
        return;
    }
    tack_arg args[16];
    fill_args(c, args);
    tack_set_debug(c->debug);
    char entry[128];
    snprintf(entry, sizeof entry, "tack_%s", tack_kernel_name(k));
    char *text = NULL;
    tack_status st = tack_kernel_generate(k, "cuda-source", args, c->nargs, &text, &err);
    if (st) fprintf(stderr, "%s (cuda-source): %s\n", c->name, err.message);
    CHECK(st == TACK_OK && text && strstr(text, "extern \"C\" __global__ void") &&
          strstr(text, entry));
    /* The variant of a GPU device: never the restrict (disjoint) one. */
    CHECK(text && !strstr(text, "__restrict__"));
    free(text);
    st = tack_kernel_generate(k, "opencl-source", args, c->nargs, &text, &err);
    CHECK(st == TACK_OK && text && strstr(text, "__kernel void") && strstr(text, entry));
    free(text);
    generated++;
    static const char *const archs[] = {"sm_80", "sm_90"};
    for (int a = 0; a < 2 && have_nvrtc; a++) {
        char target[32], want[32];
        snprintf(target, sizeof target, "cuda:%s", archs[a]);
        st = tack_kernel_generate(k, target, args, c->nargs, &text, &err);
        if (st) fprintf(stderr, "%s (%s): %s\n", c->name, target, err.message);
        CHECK(st == TACK_OK && text);
        if (!text) continue;
        snprintf(want, sizeof want, ".target %s", archs[a]);
        CHECK(strstr(text, want) != NULL);
        CHECK(strstr(text, ".entry") && strstr(text, entry));
        ptx_made++;
        if (*ptxas) {
            int rc = run_ptxas(text, archs[a], c->name);
            CHECK(rc == 0);
            ptx_checked += rc == 0;
        }
        free(text);
    }
    tack_set_debug(0);
    tack_kernel_free(k);
}

static void test_generate_cases(void) {
    static gl_case cases[128];
    int n = gl_cases(cases, 128);
    for (int i = 0; i < n; i++) generate_case(&cases[i]);
    printf("%d kernels generated as CUDA C and OpenCL C; %d PTX made by NVRTC%s; %d accepted "
           "by ptxas%s\n",
           generated, ptx_made, have_nvrtc ? "" : " (NVRTC absent: skipped)", ptx_checked,
           *ptxas ? "" : " (ptxas absent: skipped)");
    CHECK(generated == n);
    if (have_nvrtc) CHECK(ptx_made == 2 * n);
    if (have_nvrtc && *ptxas) CHECK(ptx_checked == 2 * n);
}

/* ---- generation's refusals ----------------------------------------------- */

static const char *SCALE =
    "def scale(x, out, a):\n    for i in range(x.shape[0]):\n        out[i] = x[i] * a\n";

static void test_generate_errors(void) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(k != NULL);
    if (!k) return;
    static float buf[16];
    int64_t shape[1] = {16};
    tack_arg args[3] = {tack_arg_array(buf, TACK_F32, 1, shape, 0),
                        tack_arg_array(buf, TACK_F32, 1, shape, 1), tack_arg_float(2.0)};
    char *text = (char *)1;
    CHECK(tack_kernel_generate(k, "vulkan", args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(text == NULL && strstr(err.message, "vulkan") && strstr(err.message, "cuda:sm_XX"));
    CHECK(tack_kernel_generate(k, "cuda:90", args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(strstr(err.message, "'90' is not a CUDA architecture") != NULL);
    CHECK(tack_kernel_generate(k, "cuda:sm_9", args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(tack_kernel_generate(k, NULL, args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(tack_kernel_generate(k, "cuda-source", args, 3, NULL, &err) == TACK_ERR_VALUE);
    /* The call's own mistakes, as a launch reports them. */
    CHECK(tack_kernel_generate(k, "cuda-source", args, 2, &text, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "takes 3 arguments") != NULL);
    tack_arg bad[3] = {args[0], tack_arg_int(3), args[2]};
    CHECK(tack_kernel_generate(k, "cuda-source", bad, 3, &text, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "'out'") != NULL);
    tack_arg ro[3] = {args[0], args[0], args[2]};
    CHECK(tack_kernel_generate(k, "cuda-source", ro, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(strstr(err.message, "read-only") != NULL);
    /* f64 arrays make the float scalar f64, as on a device. */
    static double dbuf[16];
    tack_arg d[3] = {tack_arg_array(dbuf, TACK_F64, 1, shape, 0),
                     tack_arg_array(dbuf, TACK_F64, 1, shape, 1), tack_arg_float(2.0)};
    CHECK(tack_kernel_generate(k, "cuda-source", d, 3, &text, &err) == TACK_OK);
    CHECK(text && strstr(text, "__dmul_rn") && strstr(text, "double *p0"));
    free(text);
    text = NULL;
    /* No variant is left on any device, and the shared CPU device is untouched. */
    tack_device *cpu = tack_device_get("cpu", &err);
    CHECK(cpu && tack_kernel_num_variants(k, cpu) == 0);
    if (have_nvrtc) {
        CHECK(tack_kernel_generate(k, "cuda:sm_30", args, 3, &text, &err) == TACK_ERR_VALUE);
        CHECK(strstr(err.message, "sm_30") && strstr(err.message, "scale"));
        printf("sm_30: %s\n", err.message);
        /* NVRTC's refusal carries its log and the kernel's name. */
        char *ptx = NULL;
        CHECK(cuda_compile_ptx("broken", "extern \"C\" __global__ void f() { undeclared(); }",
                               "sm_80", &ptx, &err) == TACK_ERR_COMPILE);
        CHECK(!ptx && strstr(err.message, "kernel 'broken': NVRTC rejected the generated code:\n") &&
              strstr(err.message, "undeclared"));
    }
    tack_kernel_free(k);
    /* An array element in the range is read from the device at launch, so
     * the kernel builds; a range the host cannot evaluate (an atomic) is
     * refused, naming the line. */
    static int32_t ibuf[8];
    int64_t ishape[1] = {8};
    tack_arg ia[1] = {tack_arg_array(ibuf, TACK_I32, 1, ishape, 1)};
    k = tack_kernel_create("def element(x):\n    for i in range(x[0]):\n        x[i] = 1\n",
                           "element.py", 1, NULL, NULL, &err);
    text = NULL;
    CHECK(k && tack_kernel_generate(k, "cuda-source", ia, 1, &text, &err) == TACK_OK && text);
    free(text);
    tack_kernel_free(k);
    k = tack_kernel_create("def refused(x):\n    for i in range(tack.atomic_add(x, 0, 1)):\n"
                           "        x[i] = 1\n", "refused.py", 1, NULL, NULL, &err);
    CHECK(k && tack_kernel_generate(k, "cuda-source", ia, 1, &text, &err) == TACK_ERR_COMPILE);
    CHECK(strstr(err.message, "refused") != NULL && strstr(err.message, "atomics") != NULL &&
          strstr(err.message, ":2:") != NULL);
    tack_kernel_free(k);
}

/* ---- the disk-cache record ----------------------------------------------- */

static void test_artifact(void) {
    const char *ptx = "//\n.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry tack_x()\n{\n ret;\n}\n";
    ser_writer w = {0};
    cuda_artifact_write("tack_x", "sm_90", ptx, &w);
    CHECK(!w.failed);
    tack_error err;
    cuda_record r;
    CHECK(cuda_artifact_parse("k", w.data, w.len, &r, &err) == TACK_OK);
    CHECK(r.head.entry_len == 6 && !memcmp(r.head.entry, "tack_x", 6));
    CHECK(r.head.target_len == 5 && !memcmp(r.head.target, "sm_90", 5));
    CHECK(r.ptx_len == strlen(ptx) && !memcmp(r.ptx, ptx, r.ptx_len));
    /* Every truncation, a byte more, and each field damaged, are refused. */
    int refused = 0;
    for (size_t n = 0; n < w.len; n++)
        refused += cuda_artifact_parse("k", w.data, n, &r, &err) == TACK_ERR_INTERNAL;
    CHECK(refused == (int)w.len);
    CHECK(strstr(err.message, "kernel 'k': the stored CUDA code is damaged") != NULL);
    unsigned char *copy = malloc(w.len + 1);
    memcpy(copy, w.data, w.len);
    copy[w.len] = 0;
    CHECK(cuda_artifact_parse("k", copy, w.len + 1, &r, &err) == TACK_ERR_INTERNAL);
    static const size_t flips[] = {0, 4}; /* magic, version */
    for (int i = 0; i < 2; i++) {
        memcpy(copy, w.data, w.len);
        copy[flips[i]] ^= 1;
        CHECK(cuda_artifact_parse("k", copy, w.len, &r, &err) == TACK_ERR_INTERNAL);
    }
    memcpy(copy, w.data, w.len);
    copy[w.len - 5] = 0; /* a NUL inside the PTX */
    CHECK(cuda_artifact_parse("k", copy, w.len, &r, &err) == TACK_ERR_INTERNAL);
    memcpy(copy, w.data, w.len);
    copy[8 + 4 + 2] = 0; /* a NUL inside the entry name */
    CHECK(cuda_artifact_parse("k", copy, w.len, &r, &err) == TACK_ERR_INTERNAL);
    free(copy);
    ser_writer_free(&w);
    ser_writer e = {0};
    cuda_artifact_write("", "sm_90", ptx, &e); /* no entry name */
    CHECK(cuda_artifact_parse("k", e.data, e.len, &r, &err) == TACK_ERR_INTERNAL);
    ser_writer_free(&e);
}

/* ---- a stand-in driver ----------------------------------------------------- */

#define FAKE_STREAM ((CUstream)(uintptr_t)0x5e)

static struct fake {
    int inits, allocs, frees, loads, unloads, launches, syncs, ctx_syncs;
    CUresult fail_load, fail_launch, fail_alloc, fail_sync, fail_tex;
    char last_ptx[1 << 16];
    char last_fn[256];
    unsigned grid[3], block[3];
    int64_t pack[GPU_PACK_SCALARS + 8];
    CUdeviceptr ptrs[4];
    int nptrs; /* array parameters the fake reads: set per test */
    CUtexObject tex_param; /* the parameter after them, when ntex is 1 */
    int ntex;
    CUcontext current;
    /* Streams: what was created, and where work went. */
    int streams, stream_destroys;
    unsigned stream_flags;
    CUstream launch_stream, copy_stream, sync_stream;
    int copies; /* host <-> device copies */
    /* Textures: the descriptors last seen, and the live objects. */
    int arrays, array_destroys, tex_copies, tex_creates, tex_destroys;
    CUDA_ARRAY3D_DESCRIPTOR array_desc;
    CUDA_MEMCPY3D tex_copy;
    CUstream tex_copy_stream;
    CUDA_RESOURCE_DESC res_desc;
    CUDA_TEXTURE_DESC tex_desc;
    CUtexObject last_object, destroyed_object;
    CUarray destroyed_array;
    /* tack.Stream: the handle the next cuStreamCreate gives (0: FAKE_STREAM),
     * the last stream destroyed; events recorded, waited for, freed. */
    CUstream next_stream, destroyed_stream, event_stream, waiting_stream;
    int events, event_syncs, event_destroys, event_waits;
} fake;

static CUresult f_init(unsigned flags) { (void)flags; fake.inits++; return CUDA_SUCCESS; }
static CUresult f_version(int *v) { *v = 12040; return CUDA_SUCCESS; }
static CUresult f_count(int *n) { *n = 1; return CUDA_SUCCESS; }
static CUresult f_get(CUdevice *d, int i) { *d = i; return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
static CUresult f_name(char *s, int n, CUdevice d) { (void)d; snprintf(s, n, "Fake H100"); return CUDA_SUCCESS; }
static CUresult f_attr(int *v, CUdevice_attribute a, CUdevice d) {
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: *v = 8; break; /* small: a test refusal */
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}
static CUresult f_mem(size_t *n, CUdevice d) { (void)d; *n = (size_t)80 << 30; return CUDA_SUCCESS; }
static CUresult f_retain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)(uintptr_t)0xc0; return CUDA_SUCCESS; }
static CUresult f_release(CUdevice d) { (void)d; return CUDA_SUCCESS; }
static CUresult f_getcur(CUcontext *c) { *c = fake.current; return CUDA_SUCCESS; }
static CUresult f_setcur(CUcontext c) { fake.current = c; return CUDA_SUCCESS; }
static CUresult f_ctx_sync(void) {
    if (fake.fail_sync) return fake.fail_sync;
    fake.ctx_syncs++;
    return CUDA_SUCCESS;
}
static CUresult f_load(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v) {
    CHECK(n == 2 && o[0] == CU_JIT_ERROR_LOG_BUFFER && v[0] != NULL);
    snprintf(fake.last_ptx, sizeof fake.last_ptx, "%s", (const char *)image);
    if (fake.fail_load) {
        snprintf((char *)v[0], (size_t)(uintptr_t)v[1], "ptxas fatal: Unsupported .version 9.0");
        return fake.fail_load;
    }
    fake.loads++;
    *m = (CUmodule)(uintptr_t)0x10;
    return CUDA_SUCCESS;
}
static CUresult f_unload(CUmodule m) { (void)m; fake.unloads++; return CUDA_SUCCESS; }
static CUresult f_getfn(CUfunction *f, CUmodule m, const char *name) {
    (void)m;
    snprintf(fake.last_fn, sizeof fake.last_fn, "%s", name);
    *f = (CUfunction)(uintptr_t)0x20;
    return CUDA_SUCCESS;
}
static CUresult f_alloc(CUdeviceptr *p, size_t n) {
    if (fake.fail_alloc) return fake.fail_alloc;
    void *m = malloc(n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    fake.allocs++;
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}
static CUresult f_free(CUdeviceptr p) { fake.frees++; free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
static CUresult f_htod(CUdeviceptr d, const void *s, size_t n, CUstream st) {
    memcpy((void *)(uintptr_t)d, s, n);
    fake.copies++;
    fake.copy_stream = st;
    return CUDA_SUCCESS;
}
static CUresult f_dtoh(void *d, CUdeviceptr s, size_t n, CUstream st) {
    memcpy(d, (void *)(uintptr_t)s, n);
    fake.copies++;
    fake.copy_stream = st;
    return CUDA_SUCCESS;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                         void **extra) {
    (void)f, (void)shmem, (void)extra;
    if (fake.fail_launch) return fake.fail_launch;
    fake.launches++;
    fake.launch_stream = s;
    fake.grid[0] = gx, fake.grid[1] = gy, fake.grid[2] = gz;
    fake.block[0] = bx, fake.block[1] = by, fake.block[2] = bz;
    memcpy(fake.pack, params[0], sizeof fake.pack);
    for (int a = 0; a < fake.nptrs; a++) memcpy(&fake.ptrs[a], params[1 + a], sizeof(CUdeviceptr));
    if (fake.ntex) memcpy(&fake.tex_param, params[1 + fake.nptrs], sizeof(CUtexObject));
    return CUDA_SUCCESS;
}
static CUresult f_stream_create(CUstream *s, unsigned flags) {
    fake.streams++;
    fake.stream_flags = flags;
    *s = fake.next_stream ? fake.next_stream : FAKE_STREAM;
    return CUDA_SUCCESS;
}
static CUresult f_stream_destroy(CUstream s) {
    CHECK(s == FAKE_STREAM || s == fake.next_stream);
    fake.stream_destroys++;
    fake.destroyed_stream = s;
    return CUDA_SUCCESS;
}
static CUresult f_event_create(CUevent *e, unsigned flags) {
    CHECK(flags == CU_EVENT_DEFAULT);
    *e = (CUevent)(uintptr_t)(0xe0 + ++fake.events);
    return CUDA_SUCCESS;
}
static CUresult f_event_record(CUevent e, CUstream s) {
    (void)e;
    fake.event_stream = s;
    return CUDA_SUCCESS;
}
static CUresult f_event_sync(CUevent e) {
    (void)e;
    if (fake.fail_sync) return fake.fail_sync;
    fake.event_syncs++;
    return CUDA_SUCCESS;
}
static CUresult f_elapsed(float *ms, CUevent a, CUevent b) {
    *ms = (float)((uintptr_t)b - (uintptr_t)a) * 0.5f; /* 0.5 ms per event between */
    return CUDA_SUCCESS;
}
static CUresult f_event_destroy(CUevent e) { (void)e; fake.event_destroys++; return CUDA_SUCCESS; }
static CUresult f_stream_wait_event(CUstream s, CUevent e, unsigned flags) {
    (void)e;
    CHECK(flags == 0);
    fake.event_waits++;
    fake.waiting_stream = s;
    return CUDA_SUCCESS;
}
static CUresult f_stream_sync(CUstream s) {
    if (fake.fail_sync) return fake.fail_sync;
    fake.syncs++;
    fake.sync_stream = s;
    return CUDA_SUCCESS;
}
static CUresult f_array3d(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d) {
    fake.arrays++;
    fake.array_desc = *d;
    *a = (CUarray)(uintptr_t)(0xa000 + fake.arrays);
    return CUDA_SUCCESS;
}
static CUresult f_array_destroy(CUarray a) {
    fake.array_destroys++;
    fake.destroyed_array = a;
    return CUDA_SUCCESS;
}
static CUresult f_memcpy3d(const CUDA_MEMCPY3D *c, CUstream s) {
    fake.tex_copies++;
    fake.tex_copy = *c;
    fake.tex_copy_stream = s;
    return CUDA_SUCCESS;
}
static CUresult f_tex_create(CUtexObject *o, const CUDA_RESOURCE_DESC *r,
                             const CUDA_TEXTURE_DESC *t, const void *view) {
    CHECK(view == NULL);
    if (fake.fail_tex) return fake.fail_tex;
    fake.tex_creates++;
    fake.res_desc = *r;
    fake.tex_desc = *t;
    *o = fake.last_object = 0x7e0 + (CUtexObject)fake.tex_creates;
    return CUDA_SUCCESS;
}
static CUresult f_tex_destroy(CUtexObject o) {
    fake.tex_destroys++;
    fake.destroyed_object = o;
    return CUDA_SUCCESS;
}
static CUresult f_errname(CUresult e, const char **s) {
    (void)e;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE; /* the fallback table answers */
}
static CUresult f_errstr(CUresult e, const char **s) {
    *s = e == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "something failed";
    return CUDA_SUCCESS;
}

static const cuda_driver_api fake_api = {
    .Init = f_init, .DriverGetVersion = f_version, .DeviceGetCount = f_count,
    .DeviceGet = f_get, .DeviceGetName = f_name, .DeviceGetAttribute = f_attr,
    .DeviceTotalMem = f_mem, .DevicePrimaryCtxRetain = f_retain,
    .DevicePrimaryCtxRelease = f_release, .CtxGetCurrent = f_getcur, .CtxSetCurrent = f_setcur,
    .CtxSynchronize = f_ctx_sync, .ModuleLoadDataEx = f_load, .ModuleUnload = f_unload,
    .ModuleGetFunction = f_getfn, .MemAlloc = f_alloc, .MemFree = f_free,
    .LaunchKernel = f_launch, .GetErrorName = f_errname, .GetErrorString = f_errstr,
    .StreamCreate = f_stream_create, .StreamDestroy = f_stream_destroy,
    .StreamSynchronize = f_stream_sync, .MemcpyHtoDAsync = f_htod, .MemcpyDtoHAsync = f_dtoh,
    .Array3DCreate = f_array3d, .ArrayDestroy = f_array_destroy, .Memcpy3DAsync = f_memcpy3d,
    .TexObjectCreate = f_tex_create, .TexObjectDestroy = f_tex_destroy,
    .StreamWaitEvent = f_stream_wait_event, .EventCreate = f_event_create,
    .EventRecord = f_event_record, .EventSynchronize = f_event_sync,
    .EventElapsedTime = f_elapsed, .EventDestroy = f_event_destroy,
};

static uint64_t f32_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

static void test_grid(backend *b) {
    unsigned g[3], k[3];
    cuda_grid(b, 0, 10, 1, 1, g, k);
    CHECK(g[0] == 1 && g[1] == 1 && g[2] == 1 && k[0] == 256 && k[1] == 1 && k[2] == 1);
    cuda_grid(b, 0, (int64_t)1 << 40, 1, 1, g, k);
    CHECK(g[0] == 132 * 32 && k[0] == 256);
    /* x is the innermost index, the last dimension the outer range. */
    cuda_grid(b, 1, 1000, 3, 1, g, k); /* a short inner extent: 4 lanes on it */
    CHECK(k[0] == 4 && k[1] == 64 && k[2] == 1 && g[0] == 1 && g[1] == 16 && g[2] == 1);
    cuda_grid(b, 1, 1000, 5000, 1, g, k);
    CHECK(k[0] == 256 && k[1] == 1 && g[0] == 20 && g[1] == 132 * 32 / 20);
    cuda_grid(b, 2, 5, 7, 9, g, k); /* nd3's shape */
    CHECK(k[0] == 16 && k[1] == 8 && k[2] == 2 && g[0] == 1 && g[1] == 1 && g[2] == 3);
    cuda_grid(b, 2, 100, 1 << 20, 1 << 20, g, k);
    CHECK(k[0] == 256 && k[1] == 1 && k[2] == 1 && g[0] == 4096 && g[1] == 1 && g[2] == 1);
    cuda_grid(b, 2, 1 << 20, 1, 1, g, k); /* all on the outer range: z holds 64 */
    CHECK(k[0] == 1 && k[1] == 1 && k[2] == 64 && g[2] <= 65535);
    cuda_grid(b, 1, 1 << 20, 1 << 20, 1, g, k);
    CHECK((int64_t)g[0] * g[1] * g[2] <= 132 * 32 && g[1] <= 65535 && g[2] <= 65535);
}

static void test_fake_driver(void) {
    cuda_driver_set_for_testing(&fake_api);
    tack_error err;
    backend *b = NULL;
    CHECK(backend_cuda.open(1, 0, &b, &err) == TACK_ERR_VALUE && !b);
    CHECK(strstr(err.message, "there is no CUDA device 1") && strstr(err.message, "Fake H100"));
    CHECK(backend_cuda.open(0, 0, &b, &err) == TACK_OK && b);
    if (!b) return;
    backend_caps c;
    backend_cuda.caps(b, &c);
    CHECK(!c.host_memory && !c.locked_dispatch && c.fp64 && c.atomics64 && c.compute_units == 132);
    CHECK(c.hardware_texture_filtering && !c.images);
    /* The device's own stream, which waits for no other. */
    CHECK(fake.streams == 1 && fake.stream_flags == CU_STREAM_NON_BLOCKING);
    CHECK(c.global_mem_bytes == (int64_t)80 << 30 && c.max_workgroup == 1024);
    const char *t = backend_cuda.cache_target(b);
    printf("describe: %s\ntarget: %s\n", backend_cuda.describe(b), t);
    CHECK(strstr(t, "device=Fake H100") && strstr(t, "cc=9.0") && strstr(t, "arch=sm_90") &&
          strstr(t, "driver=12040") && strstr(t, "nvrtc=") && strstr(t, "--fmad=false"));
    CHECK(strstr(backend_cuda.describe(b), "compute capability 9.0") != NULL);
    test_grid(b);

    /* Memory, and an allocation the driver refuses. */
    void *h = NULL;
    CHECK(backend_cuda.mem_alloc(b, 0, &h, &err) == TACK_OK && h);
    backend_cuda.mem_free(b, h);
    fake.fail_alloc = CUDA_ERROR_OUT_OF_MEMORY;
    CHECK(backend_cuda.mem_alloc(b, 1 << 20, &h, &err) == TACK_ERR_NOMEM && !h);
    CHECK(strstr(err.message, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)") != NULL);
    fake.fail_alloc = 0;
    CHECK(backend_cuda.mem_alloc(b, (size_t)81 << 30, &h, &err) == TACK_ERR_NOMEM);
    /* Copies are queued on the stream and waited for there. */
    CHECK(backend_cuda.mem_alloc(b, 16, &h, &err) == TACK_OK && h);
    int copies = fake.copies, syncs0 = fake.syncs;
    char in[16] = "stream ordered!", back[16] = "";
    fake.copy_stream = fake.sync_stream = NULL;
    CHECK(backend_cuda.mem_write(b, h, 0, in, 16, &err) == TACK_OK);
    CHECK(fake.copy_stream == FAKE_STREAM && fake.sync_stream == FAKE_STREAM);
    fake.copy_stream = fake.sync_stream = NULL;
    CHECK(backend_cuda.mem_read(b, h, 0, back, 16, &err) == TACK_OK && !memcmp(in, back, 16));
    CHECK(fake.copy_stream == FAKE_STREAM && fake.sync_stream == FAKE_STREAM);
    CHECK(fake.copies == copies + 2 && fake.syncs == syncs0 + 2);
    /* A fault surfaces at the wait, named. */
    fake.fail_sync = CUDA_ERROR_ILLEGAL_ADDRESS;
    CHECK(backend_cuda.mem_read(b, h, 4, back, 8, &err) == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "reading 8 bytes at offset 4: cuStreamSynchronize failed: "
                              "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);
    /* synchronize waits for the whole context: another library's
     * streams in it too (interop). */
    CHECK(backend_cuda.synchronize(b, &err) == TACK_ERR_DEVICE &&
          strstr(err.message, "cuCtxSynchronize failed"));
    fake.fail_sync = 0;
    int ctx_syncs = fake.ctx_syncs;
    CHECK(backend_cuda.synchronize(b, &err) == TACK_OK && fake.ctx_syncs == ctx_syncs + 1);
    backend_cuda.mem_free(b, h);

    if (!have_nvrtc) {
        printf("NVRTC absent: build, artifact and launch over the stand-in driver skipped\n");
        backend_cuda.close(b);
        CHECK(fake.stream_destroys == 1);
        cuda_driver_set_for_testing(NULL);
        return;
    }
    /* Build: the driver gets the PTX for the device's architecture. */
    static float buf[1000];
    int64_t shape[1] = {1000};
    tack_arg args[3] = {tack_arg_array(buf, TACK_F32, 1, shape, 0),
                        tack_arg_array(buf, TACK_F32, 1, shape, 1), tack_arg_float(2.5)};
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    ir_func *f = gl_variant(SCALE, &ast, args, 3, 0, slots, dims, &err);
    CHECK(f != NULL);
    backend_code *code = NULL;
    uint64_t ns = 0;
    CHECK(f && backend_cuda.build(b, f, "0123abcd", &code, &ns, &err) == TACK_OK && code);
    CHECK(fake.loads == 1 && strstr(fake.last_ptx, ".target sm_90") &&
          strstr(fake.last_ptx, ".entry tack_0123abcd"));
    CHECK(!strcmp(fake.last_fn, "tack_0123abcd") && ns > 0);

    /* Artifact -> load: the same PTX reaches the driver, without NVRTC. */
    ser_writer w = {0};
    CHECK(code && backend_cuda.artifact(b, code, &w) == 0);
    char built[sizeof fake.last_ptx];
    memcpy(built, fake.last_ptx, sizeof built);
    unsigned long long before = atomic_load(&backend_stats.binary_loads);
    backend_code *again = NULL;
    CHECK(f && backend_cuda.load(b, f, w.data, w.len, &again, &err) == TACK_OK && again);
    CHECK(fake.loads == 2 && !strcmp(fake.last_ptx, built));
    CHECK(atomic_load(&backend_stats.binary_loads) == before + 1);
    /* A record for another architecture, and a damaged one. */
    ser_writer w80 = {0};
    cuda_artifact_write("tack_0123abcd", "sm_80", built, &w80);
    backend_code *other = NULL;
    CHECK(f && backend_cuda.load(b, f, w80.data, w80.len, &other, &err) == TACK_ERR_INTERNAL);
    CHECK(!other && strstr(err.message, "sm_80"));
    CHECK(f && backend_cuda.load(b, f, w.data, w.len - 1, &other, &err) == TACK_ERR_INTERNAL);
    ser_writer_free(&w80);
    ser_writer_free(&w);

    /* A launch: the pack by value, then one device pointer per array. */
    slots[0] = 0x1000;
    slots[1] = 0x2000;
    slots[2] = f32_bits(2.5f);
    /* The range first, as the runtime does, then the launch. */
    int64_t range[BACKEND_RANGE_LEN];
    backend_call call = {"scale", slots, (const int64_t(*)[TACK_MAX_NDIM])dims, 3, 0, range, NULL};
    CHECK(again && backend_cuda.range(b, again, &call, range, &err) == TACK_OK);
    fake.nptrs = 2;
    int syncs = fake.syncs;
    CHECK(again && backend_cuda.launch(b, again, &call, &err) == TACK_OK);
    /* Queued: the launch returns without a wait (caps.queued_launch). */
    CHECK(fake.launches == 1 && fake.syncs == syncs);
    CHECK(fake.launch_stream == FAKE_STREAM);
    backend_caps caps;
    backend_cuda.caps(b, &caps);
    CHECK(caps.queued_launch == 1);
    CHECK(fake.pack[GPU_PACK_START] == 0 && fake.pack[GPU_PACK_STEP] == 1 &&
          fake.pack[GPU_PACK_COUNT] == 1000 && fake.pack[GPU_PACK_INNER0] == 1);
    CHECK((uint64_t)fake.pack[GPU_PACK_SCALARS + 2] == f32_bits(2.5f));
    CHECK(fake.pack[GPU_PACK_SCALARS + 0] == 0 && fake.pack[GPU_PACK_SCALARS + 1] == 0);
    CHECK(fake.ptrs[0] == 0x1000 && fake.ptrs[1] == 0x2000);
    CHECK(fake.grid[0] == 4 && fake.block[0] == 256);
    /* The driver's failures name the call and CUDA's error. */
    fake.fail_launch = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    CHECK(backend_cuda.launch(b, again, &call, &err) == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "kernel 'scale': cuLaunchKernel failed: "
                              "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES") != NULL);
    fake.fail_launch = 0;
    /* A fault in a queued kernel's run surfaces at the next wait (a copy),
     * which names it; reported once. */
    fake.fail_sync = CUDA_ERROR_LAUNCH_FAILED;
    CHECK(backend_cuda.launch(b, again, &call, &err) == TACK_OK);
    char got[8];
    void *hb = NULL;
    fake.fail_sync = 0;
    CHECK(backend_cuda.mem_alloc(b, 8, &hb, &err) == TACK_OK);
    fake.fail_sync = CUDA_ERROR_LAUNCH_FAILED;
    CHECK(backend_cuda.mem_read(b, hb, 0, got, 8, &err) == TACK_ERR_DEVICE);
    printf("queued fault: %s\n", err.message);
    CHECK(strstr(err.message, "kernel 'scale' (queued earlier, reported at synchronization): "
                              "reading 8 bytes at offset 0: cuStreamSynchronize failed: "
                              "CUDA_ERROR_LAUNCH_FAILED") != NULL);
    CHECK(backend_cuda.mem_read(b, hb, 0, got, 8, &err) == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "'scale'") == NULL);
    /* Several launches before the wait: the failure names each kernel it
     * may have been; synchronize (the context's) reports it too. */
    fake.fail_sync = 0;
    call.kernel_name = "first";
    CHECK(backend_cuda.launch(b, again, &call, &err) == TACK_OK);
    call.kernel_name = "second";
    CHECK(backend_cuda.launch(b, again, &call, &err) == TACK_OK);
    CHECK(backend_cuda.launch(b, again, &call, &err) == TACK_OK);
    call.kernel_name = "scale";
    fake.fail_sync = CUDA_ERROR_LAUNCH_FAILED;
    CHECK(backend_cuda.synchronize(b, &err) == TACK_ERR_DEVICE);
    printf("queued faults: %s\n", err.message);
    CHECK(strstr(err.message, "one of the kernels 'first', 'second' (queued since the last "
                              "synchronization, reported there): synchronizing the device: "
                              "cuCtxSynchronize failed") != NULL);
    /* The runtime's wait after a launch (debug, tack.timer,
     * TACK_LAUNCH_WAIT=1) is the stream's, naming the kernel. */
    fake.fail_sync = 0;
    CHECK(backend_cuda.launch(b, again, &call, &err) == TACK_OK);
    fake.fail_sync = CUDA_ERROR_ILLEGAL_ADDRESS;
    fake.sync_stream = NULL;
    CHECK(backend_cuda.queue_synchronize(b, NULL, &err) == TACK_ERR_DEVICE);
    CHECK(fake.sync_stream == NULL);
    CHECK(strstr(err.message, "kernel 'scale' (queued earlier") &&
          strstr(err.message, "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
    fake.fail_sync = 0;
    CHECK(backend_cuda.queue_synchronize(b, NULL, &err) == TACK_OK &&
          fake.sync_stream == FAKE_STREAM);
    backend_cuda.mem_free(b, hb);
    fake.fail_load = CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    CHECK(f && backend_cuda.build(b, f, "x", &other, &ns, &err) == TACK_ERR_DEVICE && !other);
    printf("refused PTX: %s\n", err.message);
    CHECK(strstr(err.message, "cuModuleLoadData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION") &&
          strstr(err.message, "TACK_NVRTC") && strstr(err.message, "Unsupported .version"));
    fake.fail_load = 0;
    int unloads = fake.unloads;
    backend_cuda.release(b, code);
    backend_cuda.release(b, again);
    CHECK(fake.unloads == unloads + 2);
    ir_func_free(f);
    arena_free(&ast);
    int destroys = fake.stream_destroys;
    backend_cuda.close(b);
    CHECK(fake.stream_destroys == destroys + 1);

    /* The whole runtime path: device arrays on "cuda", one launch, debug
     * mode's staged record. */
    tack_device *dev = tack_device_create("cuda", 0, &err);
    CHECK(dev && !tack_device_host_memory(dev));
    tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    if (dev && k) {
        void *x = tack_device_alloc(dev, sizeof buf, &err);
        void *out = tack_device_alloc(dev, sizeof buf, &err);
        CHECK(x && out && tack_device_write(dev, x, 0, buf, sizeof buf, &err) == TACK_OK);
        tack_arg da[3] = {tack_arg_array(x, TACK_F32, 1, shape, 0),
                          tack_arg_array(out, TACK_F32, 1, shape, 1), tack_arg_float(2.0)};
        da[0].device = da[1].device = dev;
        int launches = fake.launches, syncs0 = fake.syncs;
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
        CHECK(fake.launches == launches + 2 && tack_kernel_num_variants(k, dev) == 1);
        /* Device arrays only: both returned queued; a read waits, and a
         * fault the stand-in reports there names the kernel. */
        CHECK(fake.syncs == syncs0);
        float head[4];
        fake.fail_sync = CUDA_ERROR_ILLEGAL_ADDRESS;
        CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_ERR_DEVICE);
        CHECK(strstr(err.message, "kernel 'scale' (queued earlier, reported at "
                                  "synchronization)") != NULL);
        fake.fail_sync = 0;
        /* Under tack.timer a launch waits (its time is the kernel's). */
        tack_set_launch_timing(1);
        syncs0 = fake.syncs;
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK && fake.syncs == syncs0 + 1);
        tack_set_launch_timing(0);
        /* tack.Stream: a non-blocking stream of its own; launches under
         * `with stream` go on it, queued. */
        CHECK(tack_stream_handle(dev, NULL) == (uint64_t)(uintptr_t)FAKE_STREAM);
        fake.next_stream = (CUstream)(uintptr_t)0x5f;
        tack_stream *s = tack_stream_create(dev, &err);
        CHECK(s && fake.stream_flags == CU_STREAM_NON_BLOCKING);
        CHECK(tack_stream_handle(NULL, s) == 0x5f);
        tack_stream *was = tack_stream_set_current(s);
        syncs0 = fake.syncs;
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
        CHECK(fake.launch_stream == fake.next_stream && fake.syncs == syncs0);
        tack_stream_set_current(was);
        fake.sync_stream = NULL;
        CHECK(tack_stream_synchronize(s, &err) == TACK_OK && fake.sync_stream == fake.next_stream);
        /* A copy waits for every stream; a fault there names the stream's
         * kernel. */
        tack_stream_set_current(s);
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
        tack_stream_set_current(was);
        fake.fail_sync = CUDA_ERROR_LAUNCH_FAILED;
        CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_ERR_DEVICE &&
              strstr(err.message, "kernel 'scale' (queued earlier"));
        fake.fail_sync = 0;
        /* Under `with s:` a copy goes on s and waits for s alone (not for
         * the device's stream). */
        tack_stream_set_current(s);
        fake.copy_stream = fake.sync_stream = NULL;
        CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_OK &&
              fake.copy_stream == fake.next_stream && fake.sync_stream == fake.next_stream);
        fake.copy_stream = fake.sync_stream = NULL;
        CHECK(tack_device_write(dev, out, 0, head, sizeof head, &err) == TACK_OK &&
              fake.copy_stream == fake.next_stream && fake.sync_stream == fake.next_stream);
        tack_stream_set_current(was);
        fake.copy_stream = NULL;
        CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_OK &&
              fake.copy_stream == FAKE_STREAM && fake.sync_stream == FAKE_STREAM);
        /* Events: recorded on the stream, waited for by the device's own
         * queue, timed by the device. */
        tack_event *e1 = tack_event_record(dev, s, &err);
        CHECK(e1 && fake.event_stream == fake.next_stream);
        tack_event *e2 = tack_event_record(dev, NULL, &err);
        CHECK(e2 && fake.event_stream == FAKE_STREAM);
        tack_stream *w = tack_stream_wrap(dev, 0x7777, &err); /* another library's */
        CHECK(w && tack_stream_handle(NULL, w) == 0x7777);
        CHECK(tack_stream_wait_event(w, e1, &err) == TACK_OK &&
              fake.waiting_stream == (CUstream)(uintptr_t)0x7777 && fake.event_waits == 1);
        int esyncs = fake.event_syncs;
        CHECK(tack_event_synchronize(e1, &err) == TACK_OK && fake.event_syncs == esyncs + 1);
        double ms = 0;
        CHECK(tack_event_elapsed(e1, e2, &ms, &err) == TACK_OK && ms == 0.5);
        tack_event_free(e1);
        tack_event_free(e2);
        CHECK(fake.event_destroys == 2);
        /* Launches on the wrapped stream go there; freeing it leaves it. */
        tack_stream_set_current(w);
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK &&
              fake.launch_stream == (CUstream)(uintptr_t)0x7777);
        tack_stream_set_current(was);
        int destroys0 = fake.stream_destroys;
        fake.sync_stream = NULL;
        tack_stream_free(w);
        CHECK(fake.stream_destroys == destroys0 && fake.sync_stream == (CUstream)(uintptr_t)0x7777);
        CHECK(!tack_stream_wrap(dev, 0, &err) && err.status == TACK_ERR_VALUE);
        tack_stream_free(s);
        CHECK(fake.stream_destroys == destroys0 + 1 && fake.destroyed_stream == fake.next_stream);
        fake.next_stream = NULL;
        launches = fake.launches - 2;
        CHECK(fake.ptrs[0] == (CUdeviceptr)(uintptr_t)x && fake.ptrs[1] == (CUdeviceptr)(uintptr_t)out);
        /* The pack from the range the runtime evaluated (call->range). */
        CHECK(fake.pack[GPU_PACK_COUNT] == 1000 && fake.pack[GPU_PACK_STEP] == 1 &&
              (uint64_t)fake.pack[GPU_PACK_SCALARS + 2] == f32_bits(2.0f));
        /* A host array is refused before anything runs. */
        tack_arg host[3] = {tack_arg_array(buf, TACK_F32, 1, shape, 0), da[1], da[2]};
        CHECK(tack_kernel_launch(k, dev, host, 3, &err) == TACK_ERR_TYPE);
        CHECK(fake.launches == launches + 2);
        tack_set_debug(1);
        fake.nptrs = 4;
        syncs0 = fake.syncs;
        CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
        CHECK(fake.syncs > syncs0); /* debug mode waits for each launch */
        tack_set_debug(0);
        fake.nptrs = 2; /* the plain variant's x and out */
        CHECK(fake.launches == launches + 3 && tack_kernel_num_variants(k, dev) == 2);
        /* Another library's device memory: wrapped as it is (a handle is
         * the CUdeviceptr), used by a launch, never freed by Tack. */
        float *theirs = calloc(1000, sizeof(float));
        void *wrapped = tack_device_wrap_mem(dev, (uint64_t)(uintptr_t)theirs, 1000 * sizeof(float), &err);
        CHECK(wrapped == (void *)theirs);
        tack_arg wa[3] = {da[0], tack_arg_array(wrapped, TACK_F32, 1, shape, 1), da[2]};
        wa[1].device = dev;
        int frees = fake.frees, syncs = fake.syncs, ctx_syncs = fake.ctx_syncs;
        CHECK(tack_kernel_launch(k, dev, wa, 3, &err) == TACK_OK);
        CHECK(fake.ptrs[1] == (CUdeviceptr)(uintptr_t)theirs && fake.frees == frees);
        CHECK(fake.syncs == syncs); /* queued */
        CHECK(tack_device_synchronize(dev, &err) == TACK_OK && fake.ctx_syncs == ctx_syncs + 1);
        CHECK(!tack_device_wrap_mem(dev, 0, 4, &err) && err.status == TACK_ERR_VALUE);
        free(theirs);
        tack_device_free_mem(dev, x);
        tack_device_free_mem(dev, out);
    }
    tack_kernel_free(k);
    tack_device_free(dev);
    CHECK(fake.allocs == fake.frees);
    cuda_driver_set_for_testing(NULL);
}

/* ---- textures over the stand-in driver ------------------------------------- */

static const char *SAMPLE =
    "def sample_points(tex, uvw, out):\n"
    "    for i in range(out.shape[0]):\n"
    "        out[i] = tex.sample(uvw[i, 0], uvw[i, 1], uvw[i, 2])\n";

/* sample_points' post-pass IR for texels of `dtype` with extents (4, 5, 6). */
static ir_func *sample_variant(tack_dtype dtype, arena *ast, uint64_t *slots,
                               int64_t (*dims)[TACK_MAX_NDIM], tack_error *err) {
    static char dummy[64] __attribute__((aligned(16)));
    int64_t tshape[3] = {4, 5, 6}, ushape[2] = {10, 3}, oshape[1] = {10};
    tack_arg args[3] = {tack_arg_array(dummy, dtype, 3, tshape, 0),
                        tack_arg_array(dummy, dtype, 2, ushape, 0),
                        tack_arg_array(dummy, dtype, 1, oshape, 1)};
    args[0].is_texture = 1;
    return gl_variant(SAMPLE, ast, args, 3, 0, slots, dims, err);
}

static void test_texture_source(void) {
    tack_error err;
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    ir_func *f32 = sample_variant(TACK_F32, &ast, slots, dims, &err);
    ir_func *f64 = sample_variant(TACK_F64, &ast, slots, dims, &err);
    CHECK(f32 && f64);
    if (f32 && f64) {
        /* CUDA: an f32 texture is fetched from its object (the data's
         * innermost axis is the fetch's x); f64 and OpenCL sample the
         * array in software, as before. */
        CHECK(gpu_hardware_texture(f32, 0, &gpu_dialect_cuda));
        CHECK(!gpu_hardware_texture(f64, 0, &gpu_dialect_cuda));
        CHECK(!gpu_hardware_texture(f32, 0, &gpu_dialect_opencl));
        CHECK(!gpu_hardware_texture(f32, 1, &gpu_dialect_cuda));
        char *cu = NULL, *cu64 = NULL, *cl = NULL;
        CHECK(gpu_emit(f32, &gpu_dialect_cuda, "e", &cu, &err) == TACK_OK);
        CHECK(gpu_emit(f64, &gpu_dialect_cuda, "e", &cu64, &err) == TACK_OK);
        CHECK(gpu_emit(f32, &gpu_dialect_opencl, "e", &cl, &err) == TACK_OK);
        if (cu && cu64 && cl) {
            CHECK(strstr(cu, "float *p0, float *p1, float *p2, unsigned long long tex0)") != NULL);
            const char *fetch = strstr(cu, "tex3D<float>(tex0, ");
            CHECK(fetch != NULL);
            /* The coordinates are the locals the body's first statements set. */
            const ir_block *body = NULL;
            for (int i = 0; i < f32->body.n && !body; i++) {
                const ir_stmt *st = f32->body.stmts[i];
                if (st->kind == IR_STORE && st->value->kind == IR_INLINE) body = st->value->body;
            }
            CHECK(body != NULL);
            if (fetch && body) {
                char want[128];
                snprintf(want, sizeof want, "tex3D<float>(tex0, l%d, l%d, l%d);",
                         body->stmts[2]->index, body->stmts[1]->index, body->stmts[0]->index);
                CHECK(!strncmp(fetch, want, strlen(want)));
            }
            CHECK(!strstr(cu, "floorf")); /* no software filtering left */
            CHECK(!strstr(cu64, "tex3D") && strstr(cu64, "floor(") && !strstr(cu64, "long long tex0"));
            CHECK(!strstr(cl, "tex3D") && strstr(cl, "floor("));
        }
        free(cu);
        free(cu64);
        free(cl);
    }
    ir_func_free(f32);
    ir_func_free(f64);
    arena_free(&ast);
}

static void test_fake_textures(void) {
    if (!have_nvrtc) {
        printf("NVRTC absent: textures over the stand-in driver skipped\n");
        return;
    }
    cuda_driver_set_for_testing(&fake_api);
    tack_error err;
    backend *b = NULL;
    CHECK(backend_cuda.open(0, 0, &b, &err) == TACK_OK && b);
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    ir_func *f = sample_variant(TACK_F32, &ast, slots, dims, &err);
    backend_code *code = NULL;
    uint64_t ns = 0;
    CHECK(b && f && backend_cuda.build(b, f, "7e7", &code, &ns, &err) == TACK_OK && code);
    if (!b || !code) goto done;
    /* NVRTC's PTX fetches through the texture unit. */
    CHECK(strstr(fake.last_ptx, "tex.3d.v4.f32.f32") != NULL);
    CHECK(code->ntextures == 1 && code->textures[0] == 0 && code->g.narrays == 3);
    CHECK(code->nwritten == 1 && code->written[0] == 2);

    void *tex = NULL, *uvw = NULL, *out = NULL;
    CHECK(backend_cuda.mem_alloc(b, 4 * 5 * 6 * 4, &tex, &err) == TACK_OK);
    CHECK(backend_cuda.mem_alloc(b, 10 * 3 * 4, &uvw, &err) == TACK_OK);
    CHECK(backend_cuda.mem_alloc(b, 10 * 4, &out, &err) == TACK_OK);
    slots[0] = (uint64_t)(uintptr_t)tex;
    slots[1] = (uint64_t)(uintptr_t)uvw;
    slots[2] = (uint64_t)(uintptr_t)out;
    int64_t range[BACKEND_RANGE_LEN];
    backend_call call = {"sample_points", slots, (const int64_t(*)[TACK_MAX_NDIM])dims, 3, 0, range, NULL};
    CHECK(backend_cuda.range(b, code, &call, range, &err) == TACK_OK);
    fake.nptrs = 3;
    fake.ntex = 1;
    int launches = fake.launches;
    CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_OK);
    CHECK(fake.launches == launches + 1 && fake.launch_stream == FAKE_STREAM);
    /* One float channel, the data's extents with its innermost axis as x. */
    CHECK(fake.arrays == 1 && fake.array_desc.Width == 6 && fake.array_desc.Height == 5 &&
          fake.array_desc.Depth == 4 && fake.array_desc.Format == CU_AD_FORMAT_FLOAT &&
          fake.array_desc.NumChannels == 1 && fake.array_desc.Flags == 0);
    /* The data copied in, device to array, on the stream. */
    CUarray array = (CUarray)(uintptr_t)(0xa000 + 1);
    const CUDA_MEMCPY3D *cp = &fake.tex_copy;
    CHECK(fake.tex_copies == 1 && fake.tex_copy_stream == FAKE_STREAM);
    CHECK(cp->srcMemoryType == CU_MEMORYTYPE_DEVICE && cp->srcDevice == slots[0] &&
          cp->srcPitch == 6 * 4 && cp->srcHeight == 5 && cp->dstMemoryType == CU_MEMORYTYPE_ARRAY &&
          cp->dstArray == array && cp->WidthInBytes == 6 * 4 && cp->Height == 5 &&
          cp->Depth == 4 && !cp->srcXInBytes && !cp->srcY && !cp->srcZ && !cp->dstXInBytes);
    /* Trilinear, clamp to edge, normalized coordinates. */
    CHECK(fake.tex_creates == 1 && fake.res_desc.resType == CU_RESOURCE_TYPE_ARRAY &&
          fake.res_desc.res.array.hArray == array && fake.res_desc.flags == 0);
    for (int d = 0; d < 3; d++) CHECK(fake.tex_desc.addressMode[d] == CU_TR_ADDRESS_MODE_CLAMP);
    CHECK(fake.tex_desc.filterMode == CU_TR_FILTER_MODE_LINEAR &&
          fake.tex_desc.flags == CU_TRSF_NORMALIZED_COORDINATES);
    /* The object follows the array pointers. */
    CHECK(fake.tex_param == fake.last_object && fake.ptrs[0] == slots[0] &&
          fake.ptrs[2] == slots[2]);

    /* Made once: a second launch copies nothing. */
    CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_OK);
    CHECK(fake.tex_creates == 1 && fake.tex_copies == 1 && fake.tex_param == fake.last_object);
    /* Written through Tack: copied again before the next sample. */
    float texels[120] = {0};
    CHECK(backend_cuda.mem_write(b, tex, 0, texels, sizeof texels, &err) == TACK_OK);
    CHECK(fake.tex_copies == 1);
    CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_OK);
    CHECK(fake.tex_creates == 1 && fake.tex_copies == 2 && fake.tex_copy_stream == FAKE_STREAM);
    /* A kernel storing to the texture's data (as a plain array) makes it
     * stale too; writing only `out` does not. */
    uint64_t wslots[TACK_MAX_PARAMS];
    int64_t wdims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    int64_t shape[1] = {120};
    static float host[120];
    tack_arg sargs[3] = {tack_arg_array(host, TACK_F32, 1, shape, 0),
                         tack_arg_array(host, TACK_F32, 1, shape, 1), tack_arg_float(2.0)};
    ir_func *sf = gl_variant(SCALE, &ast, sargs, 3, 0, wslots, wdims, &err);
    backend_code *scale = NULL;
    CHECK(sf && backend_cuda.build(b, sf, "5ca1e", &scale, &ns, &err) == TACK_OK && scale);
    if (scale) {
        wslots[0] = slots[2];
        wslots[1] = slots[0]; /* out is the texture's data */
        int64_t wrange[BACKEND_RANGE_LEN];
        backend_call wcall = {"scale", wslots, (const int64_t(*)[TACK_MAX_NDIM])wdims, 3, 0, wrange, NULL};
        fake.ntex = 0;
        fake.nptrs = 2;
        CHECK(backend_cuda.range(b, scale, &wcall, wrange, &err) == TACK_OK);
        CHECK(backend_cuda.launch(b, scale, &wcall, &err) == TACK_OK);
        fake.ntex = 1;
        fake.nptrs = 3;
        CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_OK);
        CHECK(fake.tex_creates == 1 && fake.tex_copies == 3);
        wslots[0] = slots[0];
        wslots[1] = slots[2]; /* reads the texture's data, writes out */
        fake.ntex = 0;
        fake.nptrs = 2;
        CHECK(backend_cuda.launch(b, scale, &wcall, &err) == TACK_OK);
        fake.ntex = 1;
        fake.nptrs = 3;
        CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_OK);
        CHECK(fake.tex_creates == 1 && fake.tex_copies == 3);
        backend_cuda.release(b, scale);
    }
    ir_func_free(sf);

    /* Freed with its data. */
    CUtexObject made = fake.last_object;
    int destroys = fake.tex_destroys, array_destroys = fake.array_destroys;
    backend_cuda.mem_free(b, tex);
    CHECK(fake.tex_destroys == destroys + 1 && fake.destroyed_object == made);
    CHECK(fake.array_destroys == array_destroys + 1 && fake.destroyed_array == array);

    /* The driver's refusal names the kernel, the texture and the call, and
     * leaves nothing behind (the array made first is destroyed). */
    CHECK(backend_cuda.mem_alloc(b, 4 * 5 * 6 * 4, &tex, &err) == TACK_OK);
    slots[0] = (uint64_t)(uintptr_t)tex;
    fake.fail_tex = CUDA_ERROR_INVALID_VALUE;
    launches = fake.launches;
    array_destroys = fake.array_destroys;
    CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_ERR_DEVICE);
    printf("refused texture: %s\n", err.message);
    CHECK(strstr(err.message, "kernel 'sample_points': texture 'tex': cuTexObjectCreate failed: "
                              "CUDA_ERROR_INVALID_VALUE") != NULL);
    CHECK(fake.launches == launches && fake.array_destroys == array_destroys + 1);
    fake.fail_tex = 0;
    /* Extents past the device's 3-D texture limit (depth 8 here). */
    dims[0][0] = 9;
    CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_ERR_VALUE);
    CHECK(strstr(err.message, "texture 'tex': extents (9, 5, 6) do not fit") != NULL);
    CHECK(fake.launches == launches);
    dims[0][0] = 4;
    /* Closing the device destroys the textures still alive. */
    CHECK(backend_cuda.launch(b, code, &call, &err) == TACK_OK);
    destroys = fake.tex_destroys;
    array_destroys = fake.array_destroys;
    backend_cuda.release(b, code);
    backend_cuda.mem_free(b, uvw);
    backend_cuda.mem_free(b, out);
    backend_cuda.close(b);
    b = NULL;
    CHECK(fake.tex_destroys == destroys + 1 && fake.array_destroys == array_destroys + 1);
    free(tex); /* the stand-in's memory, which the closed device no longer frees */
done:
    if (b) backend_cuda.close(b);
    fake.ntex = 0;
    ir_func_free(f);
    arena_free(&ast);
    cuda_driver_set_for_testing(NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *why = NULL;
    have_nvrtc = cuda_nvrtc_load(&why) != NULL;
    if (have_nvrtc) printf("NVRTC %s at %s\n", cuda_nvrtc_version(), cuda_nvrtc_path());
    else printf("NVRTC absent, PTX checks skipped: %s\n", why);
    const char *roots[] = {getenv("CUDA_PATH"), getenv("CUDA_HOME"), "/usr/local/cuda"};
    for (int i = 0; i < 3 && !*ptxas; i++) {
        if (!roots[i] || !*roots[i]) continue;
        snprintf(ptxas, sizeof ptxas, "%s/bin/ptxas", roots[i]);
        if (access(ptxas, X_OK)) ptxas[0] = 0;
    }
    if (!*ptxas) printf("ptxas absent (no $CUDA_PATH/bin, $CUDA_HOME/bin or /usr/local/cuda/bin): "
                        "PTX is not assembled\n");
    test_no_driver();
    test_artifact();
    test_generate_errors();
    test_fake_driver();
    test_texture_source();
    test_fake_textures();
    test_generate_cases();
    return CHECK_DONE();
}

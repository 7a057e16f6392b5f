/* test_hip.c - the HIP backend without an AMD GPU.
 *
 *   - tack_device_get("hip") where there is no runtime (or no device):
 *     TACK_ERR_DEVICE saying what is missing;
 *   - every GPU test kernel (gpu_cases.h) through
 *     tack_kernel_generate_binary: HIP C++, and code objects for gfx90a and
 *     gfx1030 from hipRTC, each an AMDGPU ELF for its ISA with the kernel's
 *     symbol (skipped, saying so, where hipRTC is absent), one of them
 *     disassembled by llvm-objdump where it is installed;
 *   - generation's refusals (targets, ISAs, hipRTC's log);
 *   - the disk-cache record: round trip, damaged records refused;
 *   - the backend over a stand-in runtime (hip_runtime_set_for_testing):
 *     open and caps (gcnArchName from hipDeviceProp_t), build (the code
 *     object the runtime is handed), artifact and load without hipRTC, the
 *     launch's parameters and grid on the device's stream, memory, runtime
 *     errors named with the call and HIP's error name, and whole launches
 *     through the runtime with device arrays. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/gpu/gpu.h"
#include "backend/hip/hip.h"
#include "check.h"
#include "gpu_cases.h"
#include "gpu_lower.h"

static int have_rtc;

/* ---- no runtime ----------------------------------------------------------- */

static void test_no_runtime(void) {
    tack_error err;
    tack_device *d = tack_device_get("hip", &err);
    if (d) {
        printf("a HIP device is present (%s): the no-device checks are skipped\n",
               tack_device_description(d));
        return;
    }
    printf("tack.device(\"hip\"): %s\n", err.message);
    CHECK(err.status == TACK_ERR_DEVICE);
    const char *why = NULL;
    if (!hip_runtime_load(&why))
        CHECK(strstr(err.message, "no HIP runtime: libamdhip64.so could not be loaded") != NULL);
    else CHECK(strstr(err.message, "no HIP device") != NULL || strstr(err.message, "hipInit") != NULL);
    CHECK(!tack_device_create("hip:1", 0, &err) && err.status == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "hip:1") != NULL);
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

/* e_flags' low byte is the ISA (EF_AMDGPU_MACH): gfx90a 0x3f, gfx1030 0x36. */
static unsigned elf_mach(const unsigned char *p) { return p[48]; }

/* The symbol table holds `name` (a function symbol: the kernel). */
static int elf_has_symbol(const unsigned char *p, size_t n, const char *name) {
    size_t want = strlen(name);
    for (size_t i = 0; i + want < n; i++)
        if (!memcmp(p + i, name, want + 1)) return 1;
    return 0;
}

static char objdump[64];
static int generated, objects_made, disassembled;
static double rtc_seconds;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* llvm-objdump on one code object: its instructions include the kernel's
 * global memory access and its end. */
static void disassemble(const void *obj, size_t n, const char *isa, const char *entry) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/tack_test_hip_%d.co", (int)getpid());
    FILE *fp = fopen(path, "wb");
    if (!fp) return;
    fwrite(obj, 1, n, fp);
    fclose(fp);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s -d --mcpu=%s %s 2>&1", objdump, isa, path);
    FILE *pp = popen(cmd, "r");
    static char text[1 << 20];
    size_t got = pp ? fread(text, 1, sizeof text - 1, pp) : 0;
    text[got] = 0;
    if (pp) pclose(pp);
    remove(path);
    char label[160];
    snprintf(label, sizeof label, "<%s>:", entry);
    CHECK(strstr(text, label) != NULL);
    CHECK(strstr(text, "s_endpgm") != NULL);
    CHECK(strstr(text, "global_store") != NULL || strstr(text, "flat_store") != NULL ||
          strstr(text, "buffer_store") != NULL);
    disassembled++;
}

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
    tack_status st = tack_kernel_generate(k, "hip-source", args, c->nargs, &text, &err);
    if (st) fprintf(stderr, "%s (hip-source): %s\n", c->name, err.message);
    CHECK(st == TACK_OK && text && strstr(text, "extern \"C\" __global__ void") &&
          strstr(text, entry) && !strstr(text, "asm(") && !strstr(text, "__restrict__"));
    free(text);
    generated++;
    static const char *const isas[] = {"gfx90a", "gfx1030"};
    static const unsigned machs[] = {0x3f, 0x36};
    for (int a = 0; a < 2 && have_rtc; a++) {
        char target[32];
        snprintf(target, sizeof target, "hip:%s", isas[a]);
        void *obj = NULL;
        size_t n = 0;
        double t0 = now_s();
        st = tack_kernel_generate_binary(k, target, args, c->nargs, &obj, &n, &err);
        rtc_seconds += now_s() - t0;
        if (st) fprintf(stderr, "%s (%s): %s\n", c->name, target, err.message);
        CHECK(st == TACK_OK && obj);
        if (!obj) continue;
        int ok = hip_is_code_object(obj, n) && elf_mach(obj) == machs[a] &&
                 elf_has_symbol(obj, n, entry) && ((char *)obj)[n] == 0;
        if (!ok) fprintf(stderr, "%s (%s): not a code object for the ISA\n", c->name, target);
        CHECK(ok);
        objects_made += ok;
        if (*objdump && !disassembled && !strcmp(c->name, "loops")) disassemble(obj, n, isas[a], entry);
        free(obj);
    }
    tack_set_debug(0);
    tack_kernel_free(k);
}

static void test_generate_cases(void) {
    static gl_case cases[128];
    int n = gl_cases(cases, 128);
    for (int i = 0; i < n; i++) generate_case(&cases[i]);
    printf("%d kernels generated as HIP C++; %d code objects (gfx90a, gfx1030) made by hipRTC "
           "in %.1f s%s; %d disassembled%s\n",
           generated, objects_made, rtc_seconds, have_rtc ? "" : " (hipRTC absent: skipped)",
           disassembled, *objdump ? "" : " (llvm-objdump absent)");
    CHECK(generated == n);
    if (have_rtc) CHECK(objects_made == 2 * n);
    if (have_rtc && *objdump) CHECK(disassembled == 1);
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
    void *obj = (void *)1;
    size_t n = 7;
    CHECK(tack_kernel_generate_binary(k, "amd", args, 3, &obj, &n, &err) == TACK_ERR_VALUE);
    CHECK(obj == NULL && n == 0 && strstr(err.message, "'amd'") &&
          strstr(err.message, "hip:gfxNNN"));
    static const char *const bad[] = {"hip:90a", "hip:gfx", "hip:gfx90a:", "hip:gfx90a:xnack",
                                      "hip:sm_90", "hip:"};
    for (int i = 0; i < 6; i++) {
        CHECK(tack_kernel_generate_binary(k, bad[i], args, 3, &obj, &n, &err) == TACK_ERR_VALUE);
        CHECK(strstr(err.message, "is not an AMD GPU architecture") != NULL);
    }
    /* Binary code is not text. */
    char *text = (char *)1;
    CHECK(tack_kernel_generate(k, "hip:gfx90a", args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(!text && strstr(err.message, "tack_kernel_generate_binary") != NULL);
    CHECK(tack_kernel_generate_binary(k, "hip:gfx90a", args, 3, &obj, NULL, &err) == TACK_ERR_VALUE);
    /* Text targets through the binary entry: the text and its length. */
    CHECK(tack_kernel_generate_binary(k, "hip-source", args, 3, &obj, &n, &err) == TACK_OK);
    CHECK(obj && n == strlen(obj) && strstr(obj, "x[") == NULL && strstr(obj, "float *p0"));
    free(obj);
    if (have_rtc) {
        /* A well-formed ISA ROCm does not know is refused before hipRTC
         * sees it (hipRTC 5.2 aborts the process on one). */
        CHECK(tack_kernel_generate_binary(k, "hip:gfx9999", args, 3, &obj, &n, &err) ==
              TACK_ERR_VALUE);
        printf("gfx9999: %s\n", err.message);
        CHECK(strstr(err.message, "kernel 'scale'") && strstr(err.message, "gfx9999") &&
              strstr(err.message, "gfx90a"));
        /* hipRTC's refusal carries its log and the kernel's name. */
        void *o = NULL;
        size_t on = 0;
        CHECK(hip_compile("broken", "extern \"C\" __global__ void f() { undeclared(); }",
                          "gfx90a", &o, &on, &err) == TACK_ERR_COMPILE);
        CHECK(!o && strstr(err.message, "kernel 'broken': hipRTC rejected the generated code:\n") &&
              strstr(err.message, "undeclared"));
        /* Features are passed through. */
        CHECK(tack_kernel_generate_binary(k, "hip:gfx90a:xnack-", args, 3, &obj, &n, &err) ==
              TACK_OK);
        CHECK(hip_is_code_object(obj, n));
        free(obj);
    }
    tack_kernel_free(k);
}

/* ---- the disk-cache record ----------------------------------------------- */

/* A minimal AMDGPU ELF header (what the record checks). */
static void fake_object(unsigned char *p, size_t n) {
    memset(p, 0, n);
    memcpy(p, "\x7f" "ELF", 4);
    p[4] = 2;
    p[5] = 1;
    p[18] = 224;
    p[48] = 0x3f;
}

static void test_artifact(void) {
    unsigned char obj[96];
    fake_object(obj, sizeof obj);
    obj[80] = 0; /* code objects hold NULs */
    ser_writer w = {0};
    hip_artifact_write("tack_x", "gfx90a:sramecc+:xnack-", obj, sizeof obj, &w);
    CHECK(!w.failed);
    tack_error err;
    hip_record r;
    CHECK(hip_artifact_parse("k", w.data, w.len, &r, &err) == TACK_OK);
    CHECK(r.head.entry_len == 6 && !memcmp(r.head.entry, "tack_x", 6));
    CHECK(r.head.target_len == 22 && !memcmp(r.head.target, "gfx90a:sramecc+:xnack-", 22));
    CHECK(r.object_len == sizeof obj && !memcmp(r.object, obj, sizeof obj));
    int refused = 0;
    for (size_t n = 0; n < w.len; n++)
        refused += hip_artifact_parse("k", w.data, n, &r, &err) == TACK_ERR_INTERNAL;
    CHECK(refused == (int)w.len);
    CHECK(strstr(err.message, "kernel 'k': the stored HIP code is damaged") != NULL);
    unsigned char *copy = malloc(w.len + 1);
    memcpy(copy, w.data, w.len);
    copy[w.len] = 0;
    CHECK(hip_artifact_parse("k", copy, w.len + 1, &r, &err) == TACK_ERR_INTERNAL);
    /* magic, version, and the ELF's machine (not AMDGPU) */
    size_t obj_at = w.len - sizeof obj;
    const size_t flips[] = {0, 4, obj_at + 18};
    for (int i = 0; i < 3; i++) {
        memcpy(copy, w.data, w.len);
        copy[flips[i]] ^= 1;
        CHECK(hip_artifact_parse("k", copy, w.len, &r, &err) == TACK_ERR_INTERNAL);
    }
    free(copy);
    ser_writer_free(&w);
    ser_writer e = {0};
    hip_artifact_write("", "gfx90a", obj, sizeof obj, &e);
    CHECK(hip_artifact_parse("k", e.data, e.len, &r, &err) == TACK_ERR_INTERNAL);
    ser_writer_free(&e);
}

/* ---- a stand-in runtime ---------------------------------------------------- */

#define FAKE_STREAM ((hipStream_t)(uintptr_t)0x5e)
#define FAKE_MODULE ((hipModule_t)(uintptr_t)0x10)

static struct fake {
    int inits, allocs, frees, loads, unloads, launches, syncs, dev_syncs, set_devices;
    hipError_t fail_init, fail_load, fail_launch, fail_alloc, fail_sync;
    int count;
    unsigned char last_object[1 << 16];
    size_t last_object_len;
    char last_fn[256];
    unsigned grid[3], block[3];
    int64_t pack[GPU_PACK_SCALARS + 8];
    void *ptrs[4];
    int nptrs;
    int current;
    int streams, stream_destroys;
    unsigned stream_flags;
    hipStream_t launch_stream, copy_stream;
    int copies;
    const char *arch; /* gcnArchName */
    /* tack.Stream: the handle the next stream gets (0: FAKE_STREAM), the
     * last one synchronized; events recorded, waited for. */
    hipStream_t next_stream, sync_stream, event_stream, waiting_stream;
    int events, event_waits, event_destroys;
} fake = {.count = 1, .current = -1, .arch = "gfx90a:sramecc+:xnack-"};

static hipError_t f_init(unsigned flags) {
    (void)flags;
    fake.inits++;
    return fake.fail_init;
}
static hipError_t f_version(int *v) { *v = 50221153; return hipSuccess; }
static hipError_t f_count(int *n) { *n = fake.count; return hipSuccess; }
static hipError_t f_get(hipDevice_t *d, int i) { *d = i; return i < fake.count ? hipSuccess : hipErrorInvalidDevice; }
static hipError_t f_name(char *s, int n, hipDevice_t d) { (void)d; snprintf(s, n, "Fake MI210"); return hipSuccess; }
static hipError_t f_attr(int *v, hipDeviceAttribute_t a, int d) {
    (void)d;
    switch (a) {
    case hipDeviceAttributeMultiprocessorCount: *v = 104; break;
    case hipDeviceAttributeMaxThreadsPerBlock: *v = 1024; break;
    case hipDeviceAttributeMaxBlockDimX: case hipDeviceAttributeMaxBlockDimY:
    case hipDeviceAttributeMaxBlockDimZ: *v = 1024; break;
    case hipDeviceAttributeMaxGridDimX: case hipDeviceAttributeMaxGridDimY:
    case hipDeviceAttributeMaxGridDimZ: *v = 2147483647; break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock: *v = 65536; break;
    case hipDeviceAttributeWarpSize: *v = 64; break;
    default: *v = 0;
    }
    return hipSuccess;
}
static hipError_t f_mem(size_t *n, hipDevice_t d) { (void)d; *n = (size_t)64 << 30; return hipSuccess; }
/* ROCm 5's layout: gcnArchName at byte 396. */
static hipError_t f_props(void *props, int d) {
    (void)d;
    memset(props, 0x55, 396);
    snprintf((char *)props + 396, 256, "%s", fake.arch);
    return hipSuccess;
}
static hipError_t f_getdev(int *d) { *d = fake.current; return hipSuccess; }
static hipError_t f_setdev(int d) { fake.current = d; fake.set_devices++; return hipSuccess; }
static hipError_t f_dev_sync(void) {
    if (fake.fail_sync) return fake.fail_sync;
    fake.dev_syncs++;
    return hipSuccess;
}
static hipError_t f_load(hipModule_t *m, const void *image) {
    /* The image's length is the ELF's: the section headers end it. */
    const unsigned char *p = image;
    uint64_t shoff;
    memcpy(&shoff, p + 40, 8);
    uint16_t shentsize = (uint16_t)(p[58] | p[59] << 8), shnum = (uint16_t)(p[60] | p[61] << 8);
    size_t n = (size_t)shoff + (size_t)shentsize * shnum;
    fake.last_object_len = n;
    if (n <= sizeof fake.last_object) memcpy(fake.last_object, image, n);
    if (fake.fail_load) return fake.fail_load;
    fake.loads++;
    *m = FAKE_MODULE;
    return hipSuccess;
}
static hipError_t f_unload(hipModule_t m) { CHECK(m == FAKE_MODULE); fake.unloads++; return hipSuccess; }
static hipError_t f_getfn(hipFunction_t *f, hipModule_t m, const char *name) {
    (void)m;
    snprintf(fake.last_fn, sizeof fake.last_fn, "%s", name);
    *f = (hipFunction_t)(uintptr_t)0x20;
    return hipSuccess;
}
static hipError_t f_alloc(void **p, size_t n) {
    if (fake.fail_alloc) return fake.fail_alloc;
    void *m = malloc(n);
    if (!m) return hipErrorOutOfMemory;
    fake.allocs++;
    *p = m;
    return hipSuccess;
}
static hipError_t f_free(void *p) { fake.frees++; free(p); return hipSuccess; }
static hipError_t f_htod(hipDeviceptr_t d, void *s, size_t n, hipStream_t st) {
    memcpy(d, s, n);
    fake.copies++;
    fake.copy_stream = st;
    return hipSuccess;
}
static hipError_t f_dtoh(void *d, hipDeviceptr_t s, size_t n, hipStream_t st) {
    memcpy(d, s, n);
    fake.copies++;
    fake.copy_stream = st;
    return hipSuccess;
}
static hipError_t f_launch(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shmem, hipStream_t s, void **params,
                           void **extra) {
    (void)f, (void)shmem;
    CHECK(extra == NULL);
    if (fake.fail_launch) return fake.fail_launch;
    fake.launches++;
    fake.launch_stream = s;
    fake.grid[0] = gx, fake.grid[1] = gy, fake.grid[2] = gz;
    fake.block[0] = bx, fake.block[1] = by, fake.block[2] = bz;
    memcpy(fake.pack, params[0], sizeof fake.pack);
    for (int a = 0; a < fake.nptrs; a++) memcpy(&fake.ptrs[a], params[1 + a], sizeof(void *));
    return hipSuccess;
}
static const char *f_errname(hipError_t e) { return e == hipErrorOutOfMemory ? "hipErrorOutOfMemory" : "hipErrorUnknown"; }
static const char *f_errstr(hipError_t e) { return e == hipErrorOutOfMemory ? "out of memory" : "something failed"; }
static hipError_t f_stream_create(hipStream_t *s, unsigned flags) {
    fake.streams++;
    fake.stream_flags = flags;
    *s = fake.next_stream ? fake.next_stream : FAKE_STREAM;
    return hipSuccess;
}
static hipError_t f_stream_destroy(hipStream_t s) {
    CHECK(s == FAKE_STREAM || s == fake.next_stream);
    fake.stream_destroys++;
    return hipSuccess;
}
static hipError_t f_stream_sync(hipStream_t s) {
    CHECK(s == FAKE_STREAM || s == fake.next_stream || s == (hipStream_t)(uintptr_t)0x7777);
    if (fake.fail_sync) return fake.fail_sync;
    fake.syncs++;
    fake.sync_stream = s;
    return hipSuccess;
}
static hipError_t f_event_create(hipEvent_t *e) {
    *e = (hipEvent_t)(uintptr_t)(0xe0 + ++fake.events);
    return hipSuccess;
}
static hipError_t f_event_record(hipEvent_t e, hipStream_t s) {
    (void)e;
    fake.event_stream = s;
    return hipSuccess;
}
static hipError_t f_event_sync(hipEvent_t e) { (void)e; return fake.fail_sync; }
static hipError_t f_elapsed(float *ms, hipEvent_t a, hipEvent_t b) {
    *ms = (float)((uintptr_t)b - (uintptr_t)a) * 0.25f;
    return hipSuccess;
}
static hipError_t f_event_destroy(hipEvent_t e) { (void)e; fake.event_destroys++; return hipSuccess; }
static hipError_t f_stream_wait_event(hipStream_t s, hipEvent_t e, unsigned flags) {
    (void)e;
    CHECK(flags == 0);
    fake.event_waits++;
    fake.waiting_stream = s;
    return hipSuccess;
}

static const hip_runtime_api fake_api = {
    .Init = f_init, .DriverGetVersion = f_version, .GetDeviceCount = f_count,
    .DeviceGet = f_get, .DeviceGetName = f_name, .DeviceGetAttribute = f_attr,
    .DeviceTotalMem = f_mem, .GetDeviceProperties = f_props, .props_arch_offset = 396,
    .GetDevice = f_getdev, .SetDevice = f_setdev, .DeviceSynchronize = f_dev_sync,
    .ModuleLoadData = f_load, .ModuleUnload = f_unload, .ModuleGetFunction = f_getfn,
    .Malloc = f_alloc, .Free = f_free, .ModuleLaunchKernel = f_launch,
    .GetErrorName = f_errname, .GetErrorString = f_errstr,
    .StreamCreateWithFlags = f_stream_create, .StreamDestroy = f_stream_destroy,
    .StreamSynchronize = f_stream_sync, .MemcpyHtoDAsync = f_htod, .MemcpyDtoHAsync = f_dtoh,
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
    hip_grid(b, 0, 10, 1, 1, g, k);
    CHECK(g[0] == 1 && g[1] == 1 && g[2] == 1 && k[0] == 256 && k[1] == 1 && k[2] == 1);
    hip_grid(b, 0, (int64_t)1 << 40, 1, 1, g, k);
    CHECK(g[0] == 104 * 32 && k[0] == 256);
    hip_grid(b, 1, 1000, 3, 1, g, k);
    CHECK(k[1] == 4 && k[0] == 64 && g[1] == 1 && g[0] == 16);
    hip_grid(b, 2, 5, 7, 9, g, k);
    CHECK(k[2] == 16 && k[1] == 8 && k[0] == 2 && g[2] == 1 && g[1] == 1 && g[0] == 3);
}

static void test_fake_runtime(void) {
    hip_runtime_set_for_testing(&fake_api);
    tack_error err;
    backend *b = NULL;
    /* No device: named, nothing left open. */
    fake.count = 0;
    CHECK(backend_hip.open(0, 0, &b, &err) == TACK_ERR_DEVICE && !b);
    CHECK(strstr(err.message, "no HIP device") != NULL);
    fake.count = 1;
    fake.fail_init = hipErrorNoDevice;
    CHECK(backend_hip.open(0, 0, &b, &err) == TACK_ERR_DEVICE && !b);
    CHECK(strstr(err.message, "tack.device(\"hip\"): no HIP device") &&
          strstr(err.message, "hipErrorNoDevice"));
    fake.fail_init = 0;
    CHECK(backend_hip.open(3, 0, &b, &err) == TACK_ERR_VALUE && !b);
    CHECK(strstr(err.message, "there is no HIP device 3: 1 device found (\"hip:0\" is Fake MI210)") != NULL);
    /* An architecture the runtime gives that is no gfx ISA: the layouts
     * disagree, said so rather than compiled for. */
    fake.arch = "Fake MI210";
    CHECK(backend_hip.open(0, 0, &b, &err) == TACK_ERR_DEVICE && !b);
    CHECK(strstr(err.message, "is not a gfx ISA") != NULL);
    fake.arch = "gfx90a:sramecc+:xnack-";

    CHECK(backend_hip.open(0, 0, &b, &err) == TACK_OK && b);
    if (!b) goto done;
    backend_caps caps;
    backend_hip.caps(b, &caps);
    CHECK(!caps.host_memory && !caps.locked_dispatch && caps.fp64 && caps.atomics64 &&
          !caps.images && !caps.hardware_texture_filtering);
    CHECK(caps.compute_units == 104 && caps.max_workgroup == 1024 && caps.local_mem_bytes == 65536);
    CHECK(caps.global_mem_bytes == (int64_t)64 << 30);
    CHECK(!strcmp(b->arch, "gfx90a:sramecc+:xnack-"));
    printf("stand-in: %s\n", backend_hip.describe(b));
    CHECK(strstr(backend_hip.describe(b), "Fake MI210 (HIP, gfx90a:sramecc+:xnack-") != NULL);
    const char *target = backend_hip.cache_target(b);
    CHECK(strstr(target, "arch=gfx90a:sramecc+:xnack-") && strstr(target, "runtime=50221153") &&
          strstr(target, "-ffp-contract=off") && strstr(target, "hiprtc="));
    /* Its own non-blocking stream. */
    CHECK(fake.streams == 1 && fake.stream_flags == hipStreamNonBlocking && b->rt.stream == FAKE_STREAM);
    test_grid(b);

    /* Memory: copies on the stream, waited for. */
    void *h = NULL;
    CHECK(backend_hip.mem_alloc(b, 64, &h, &err) == TACK_OK && h);
    float in[16], back[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i * 1.5f;
    int syncs = fake.syncs;
    CHECK(backend_hip.mem_write(b, h, 0, in, sizeof in, &err) == TACK_OK);
    CHECK(fake.copy_stream == FAKE_STREAM && fake.syncs == syncs + 1);
    CHECK(backend_hip.mem_read(b, h, 8, back, 8, &err) == TACK_OK && back[0] == in[2] && back[1] == in[3]);
    void *zero = NULL;
    CHECK(backend_hip.mem_alloc(b, 0, &zero, &err) == TACK_OK && zero);
    backend_hip.mem_free(b, zero);
    fake.fail_alloc = hipErrorOutOfMemory;
    void *none = (void *)1;
    CHECK(backend_hip.mem_alloc(b, 1 << 20, &none, &err) == TACK_ERR_NOMEM && !none);
    CHECK(strstr(err.message, "hipMalloc failed: hipErrorOutOfMemory (out of memory)") != NULL);
    fake.fail_alloc = 0;
    CHECK(backend_hip.mem_alloc(b, (size_t)65 << 30, &none, &err) == TACK_ERR_NOMEM);
    fake.fail_sync = hipErrorIllegalAddress;
    CHECK(backend_hip.mem_write(b, h, 0, in, 4, &err) == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "hipStreamSynchronize failed: hipErrorIllegalAddress") != NULL);
    fake.fail_sync = 0;
    backend_hip.mem_free(b, h);

    /* Build: the code object hipRTC made is what the runtime is handed. */
    arena ast;
    arena_init(&ast);
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    static float host[1000];
    int64_t shape[1] = {1000};
    tack_arg args[3] = {tack_arg_array(host, TACK_F32, 1, shape, 0),
                        tack_arg_array(host, TACK_F32, 1, shape, 1), tack_arg_float(2.0)};
    ir_func *f = gl_variant(SCALE, &ast, args, 3, 0, slots, dims, &err);
    CHECK(f != NULL);
    backend_code *code = NULL;
    uint64_t ns = 0;
    if (f && have_rtc) {
        CHECK(backend_hip.build(b, f, "5ca1e", &code, &ns, &err) == TACK_OK && code);
        if (!code) fprintf(stderr, "build: %s\n", err.message);
    }
    if (code) {
        CHECK(fake.loads == 1 && !strcmp(fake.last_fn, "tack_5ca1e") && ns > 0);
        CHECK(fake.last_object_len == code->object_len &&
              !memcmp(fake.last_object, code->object, code->object_len));
        CHECK(hip_is_code_object(fake.last_object, fake.last_object_len) &&
              elf_has_symbol(fake.last_object, fake.last_object_len, "tack_5ca1e"));
        CHECK(code->g.narrays == 2 && code->g.arrays[0] == 0 && code->g.arrays[1] == 1);
        /* Its artifact loads without hipRTC: the same bytes to the runtime. */
        ser_writer w = {0};
        CHECK(backend_hip.artifact(b, code, &w) == 0);
        backend_code *loaded = NULL;
        CHECK(backend_hip.load(b, f, w.data, w.len, &loaded, &err) == TACK_OK && loaded);
        CHECK(fake.loads == 2 && loaded && loaded->object_len == code->object_len);
        backend_hip.release(b, loaded);
        CHECK(fake.unloads == 1);
        /* The same record on a device of another ISA is damage. */
        snprintf(b->arch, sizeof b->arch, "gfx1030");
        CHECK(backend_hip.load(b, f, w.data, w.len, &loaded, &err) == TACK_ERR_INTERNAL);
        CHECK(strstr(err.message, "is for gfx90a:sramecc+:xnack-, the device is gfx1030") != NULL);
        snprintf(b->arch, sizeof b->arch, "gfx90a:sramecc+:xnack-");
        ser_writer_free(&w);

        /* A launch: the pack by value, then the device pointers. */
        void *x = NULL, *out = NULL;
        CHECK(backend_hip.mem_alloc(b, sizeof host, &x, &err) == TACK_OK);
        CHECK(backend_hip.mem_alloc(b, sizeof host, &out, &err) == TACK_OK);
        slots[0] = (uint64_t)(uintptr_t)x;
        slots[1] = (uint64_t)(uintptr_t)out;
        int64_t range[BACKEND_RANGE_LEN];
        backend_call call = {"scale", slots, (const int64_t(*)[TACK_MAX_NDIM])dims, 3, 0, range, NULL};
        CHECK(backend_hip.range(b, code, &call, range, &err) == TACK_OK);
        CHECK(range[0] == 0 && range[1] == 1000 && range[2] == 1);
        fake.nptrs = 2;
        syncs = fake.syncs;
        CHECK(backend_hip.launch(b, code, &call, &err) == TACK_OK);
        /* Queued: the launch returns without a wait (caps.queued_launch). */
        CHECK(fake.launches == 1 && fake.launch_stream == FAKE_STREAM && fake.syncs == syncs);
        CHECK(fake.pack[GPU_PACK_START] == 0 && fake.pack[GPU_PACK_STEP] == 1 &&
              fake.pack[GPU_PACK_COUNT] == 1000 &&
              (uint64_t)fake.pack[GPU_PACK_SCALARS + 2] == f32_bits(2.0f));
        CHECK(fake.ptrs[0] == x && fake.ptrs[1] == out);
        CHECK(fake.block[0] == 256 && fake.grid[0] == 4 && fake.grid[1] == 1);
        /* An empty range launches nothing. */
        int64_t empty[BACKEND_RANGE_LEN] = {5, 5, 1, 1, 1};
        backend_call none_call = call;
        none_call.range = empty;
        CHECK(backend_hip.launch(b, code, &none_call, &err) == TACK_OK && fake.launches == 1);
        /* The runtime's refusals, named with the call and the error. */
        fake.fail_launch = hipErrorLaunchOutOfResources;
        CHECK(backend_hip.launch(b, code, &call, &err) == TACK_ERR_DEVICE);
        CHECK(strstr(err.message, "kernel 'scale': hipModuleLaunchKernel failed: "
                                  "hipErrorLaunchOutOfResources") != NULL);
        fake.fail_launch = 0;
        /* A fault in the queued kernel surfaces at the next wait (a copy),
         * naming it, once. */
        fake.fail_sync = hipErrorIllegalAddress;
        CHECK(backend_hip.launch(b, code, &call, &err) == TACK_OK);
        char got[8];
        CHECK(backend_hip.mem_read(b, out, 0, got, 8, &err) == TACK_ERR_DEVICE);
        printf("queued fault: %s\n", err.message);
        CHECK(strstr(err.message, "kernel 'scale' (queued earlier, reported at synchronization): "
                                  "reading 8 bytes at offset 0: hipStreamSynchronize failed: "
                                  "hipErrorIllegalAddress") != NULL);
        CHECK(backend_hip.mem_read(b, out, 0, got, 8, &err) == TACK_ERR_DEVICE &&
              !strstr(err.message, "'scale'"));
        /* The device's synchronize and the runtime's per-launch wait
         * (queue_synchronize) name it too. */
        fake.fail_sync = 0;
        CHECK(backend_hip.launch(b, code, &call, &err) == TACK_OK);
        fake.fail_sync = hipErrorLaunchFailure;
        CHECK(backend_hip.synchronize(b, &err) == TACK_ERR_DEVICE &&
              strstr(err.message, "kernel 'scale' (queued earlier") &&
              strstr(err.message, "hipDeviceSynchronize failed"));
        fake.fail_sync = 0;
        CHECK(backend_hip.launch(b, code, &call, &err) == TACK_OK);
        fake.fail_sync = hipErrorLaunchFailure;
        CHECK(backend_hip.queue_synchronize(b, NULL, &err) == TACK_ERR_DEVICE &&
              strstr(err.message, "kernel 'scale' (queued earlier") &&
              strstr(err.message, "hipStreamSynchronize failed"));
        fake.fail_sync = 0;
        syncs = fake.syncs;
        CHECK(backend_hip.queue_synchronize(b, NULL, &err) == TACK_OK && fake.syncs == syncs + 1);
        backend_hip.mem_free(b, x);
        backend_hip.mem_free(b, out);
        backend_hip.release(b, code);

        /* A code object the runtime refuses: named, with the ISA. */
        fake.fail_load = hipErrorNoBinaryForGpu;
        CHECK(backend_hip.build(b, f, "5ca1e", &code, &ns, &err) == TACK_ERR_DEVICE && !code);
        printf("refused code object: %s\n", err.message);
        CHECK(strstr(err.message, "kernel 'scale': hipModuleLoadData failed: "
                                  "hipErrorNoBinaryForGpu") &&
              strstr(err.message, "for gfx90a:sramecc+:xnack-"));
        fake.fail_load = 0;
    } else if (!have_rtc) {
        printf("hipRTC absent: builds over the stand-in runtime skipped\n");
    }
    /* Inspect: the source only. */
    char *text = NULL;
    if (f) {
        CHECK(backend_hip.inspect(b, f, "abc", TACK_INSPECT_LLVM, &text, &err) == TACK_OK);
        CHECK(text && strstr(text, "extern \"C\" __global__ void tack_abc("));
        free(text);
        CHECK(backend_hip.inspect(b, f, "abc", TACK_INSPECT_ASM, &text, &err) == TACK_ERR_VALUE);
    }
    CHECK(backend_hip.synchronize(b, &err) == TACK_OK && fake.dev_syncs == 1);
    ir_func_free(f);
    arena_free(&ast);
    backend_hip.close(b);
    b = NULL;
    CHECK(fake.stream_destroys == 1);

    /* Through the runtime: a device, device arrays, two launches of one
     * variant, and the debug variant. */
    if (have_rtc) {
        tack_device *dev = tack_device_create("hip", 0, &err);
        CHECK(dev && !tack_device_host_memory(dev));
        tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
        if (dev && k) {
            void *x = tack_device_alloc(dev, sizeof host, &err);
            void *out = tack_device_alloc(dev, sizeof host, &err);
            CHECK(x && out && tack_device_write(dev, x, 0, host, sizeof host, &err) == TACK_OK);
            tack_arg da[3] = {tack_arg_array(x, TACK_F32, 1, shape, 0),
                              tack_arg_array(out, TACK_F32, 1, shape, 1), tack_arg_float(2.0)};
            da[0].device = da[1].device = dev;
            int launches = fake.launches;
            fake.nptrs = 2;
            int syncs0 = fake.syncs;
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            CHECK(fake.launches == launches + 2 && tack_kernel_num_variants(k, dev) == 1);
            CHECK(fake.syncs == syncs0); /* queued */
            float head[4];
            fake.fail_sync = hipErrorIllegalAddress;
            CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_ERR_DEVICE &&
                  strstr(err.message, "kernel 'scale' (queued earlier"));
            fake.fail_sync = 0;
            /* tack.Stream: a stream of its own, launches queued on it; a
             * copy waits for it and names its kernel; events on it. */
            CHECK(tack_stream_handle(dev, NULL) == (uint64_t)(uintptr_t)FAKE_STREAM);
            fake.next_stream = (hipStream_t)(uintptr_t)0x5f;
            tack_stream *s = tack_stream_create(dev, &err);
            CHECK(s && tack_stream_handle(NULL, s) == 0x5f &&
                  fake.stream_flags == hipStreamNonBlocking);
            tack_stream *was = tack_stream_set_current(s);
            syncs0 = fake.syncs;
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            tack_stream_set_current(was);
            CHECK(fake.launch_stream == fake.next_stream && fake.syncs == syncs0);
            fake.fail_sync = hipErrorLaunchFailure;
            CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_ERR_DEVICE &&
                  strstr(err.message, "kernel 'scale' (queued earlier"));
            fake.fail_sync = 0;
            CHECK(tack_stream_synchronize(s, &err) == TACK_OK && fake.sync_stream == fake.next_stream);
            /* Under `with s:` a copy goes on s and waits for s alone (not
             * for the device's stream). */
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
            tack_event *e1 = tack_event_record(dev, s, &err);
            CHECK(e1 && fake.event_stream == fake.next_stream);
            tack_event *e2 = tack_event_record(dev, NULL, &err);
            CHECK(e2 && fake.event_stream == FAKE_STREAM);
            tack_stream *w = tack_stream_wrap(dev, 0x7777, &err);
            CHECK(w && tack_stream_wait_event(w, e1, &err) == TACK_OK &&
                  fake.waiting_stream == (hipStream_t)(uintptr_t)0x7777);
            double ms = 0;
            CHECK(tack_event_elapsed(e1, e2, &ms, &err) == TACK_OK && ms == 0.25);
            CHECK(tack_event_synchronize(e1, &err) == TACK_OK);
            tack_event_free(e1);
            tack_event_free(e2);
            CHECK(fake.event_destroys == 2);
            int destroys0 = fake.stream_destroys;
            tack_stream_free(w); /* another library's: left alone */
            CHECK(fake.stream_destroys == destroys0);
            tack_stream_free(s);
            CHECK(fake.stream_destroys == destroys0 + 1);
            fake.next_stream = NULL;
            launches = fake.launches - 2; /* the stream's launch aside */
            CHECK(fake.ptrs[0] == x && fake.ptrs[1] == out);
            CHECK(fake.pack[GPU_PACK_COUNT] == 1000);
            tack_arg host_args[3] = {tack_arg_array(host, TACK_F32, 1, shape, 0), da[1], da[2]};
            CHECK(tack_kernel_launch(k, dev, host_args, 3, &err) == TACK_ERR_TYPE);
            tack_set_debug(1);
            fake.nptrs = 4;
            syncs0 = fake.syncs;
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            CHECK(fake.syncs > syncs0); /* debug mode waits for each launch */
            tack_set_debug(0);
            CHECK(fake.launches == launches + 3 && tack_kernel_num_variants(k, dev) == 2);
            tack_device_free_mem(dev, x);
            tack_device_free_mem(dev, out);
        }
        tack_kernel_free(k);
        tack_device_free(dev);
    }
done:
    CHECK(fake.allocs == fake.frees);
    hip_runtime_set_for_testing(NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *why = NULL;
    have_rtc = hip_rtc_load(&why) != NULL;
    if (have_rtc) printf("hipRTC %s at %s\n", hip_rtc_version(), hip_rtc_path());
    else printf("hipRTC absent, code objects not made: %s\n", why);
    static const char *const dumps[] = {"llvm-objdump", "llvm-objdump-15", "llvm-objdump-14"};
    for (int i = 0; i < 3 && !*objdump; i++) {
        char cmd[96];
        snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", dumps[i]);
        if (!system(cmd)) snprintf(objdump, sizeof objdump, "%s", dumps[i]);
    }
    test_no_runtime();
    test_artifact();
    test_generate_errors();
    test_fake_runtime();
    test_generate_cases();
    return CHECK_DONE();
}

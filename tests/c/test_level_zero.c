/* test_level_zero.c - the Level Zero backend without an Intel GPU, and
 * the MSL dialect without a Mac.
 *
 *   - tack_device_get("level_zero") where there is no loader (or no GPU):
 *     TACK_ERR_DEVICE saying what is missing;
 *   - every GPU test kernel (gpu_cases.h) as MSL (or refused naming f64,
 *     the atomics or debug mode), never with a goto; three of them as
 *     SPIR-V and as native binaries for dg2 through ocloc (skipped, saying
 *     so, where ocloc is absent; test_gpu_dialects.py checks them all);
 *   - generation's refusals (targets, f64 on tgllp, ocloc's log);
 *   - the disk-cache record: round trip, damaged records refused;
 *   - the backend over a stand-in driver (ze_set_for_testing): open and
 *     caps (fp64 and 64-bit atomics from the module flags), build (the
 *     native binary the driver is handed; SPIR-V when it refuses that, and
 *     the driver's own binary then stored), artifact and load without
 *     ocloc, the launch's arguments and groups on the device's list,
 *     memory, driver errors named with the call and the result's name, and
 *     whole launches through the runtime with device arrays. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "backend/level_zero/level_zero.h"
#include "check.h"
#include "gpu_cases.h"
#include "gpu_lower.h"

static int have_ocloc;

static void fill_args(const gl_case *c, tack_arg *args) {
    static char dummy[64] __attribute__((aligned(16)));
    for (int i = 0; i < c->nargs; i++) {
        const gl_argspec *s = &c->a[i];
        if (!s->is_array) args[i] = s->scalar;
        else args[i] = gl_view(s, dummy);
    }
}

/* ---- no loader ----------------------------------------------------------- */

static void test_no_device(void) {
    tack_error err;
    tack_device *d = tack_device_get("level_zero", &err);
    if (d) {
        printf("a Level Zero device is present (%s): the no-device checks are skipped\n",
               tack_device_description(d));
        return;
    }
    printf("tack.device(\"level_zero\"): %s\n", err.message);
    CHECK(err.status == TACK_ERR_DEVICE);
    const char *why = NULL;
    /* The default names, or the one TACK_ZE_LOADER gives (the sanitizer
     * runs name none that exists). */
    const char *chosen = getenv("TACK_ZE_LOADER");
    if (!ze_load(&why))
        CHECK(strstr(err.message, chosen && *chosen ? "no Level Zero loader: TACK_ZE_LOADER names"
                                                    : "no Level Zero loader: libze_loader.so.1") != NULL);
    else CHECK(strstr(err.message, "no Level Zero device") != NULL);
    CHECK(!tack_device_create("level_zero:1", 0, &err) && err.status == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "level_zero:1") != NULL);
}

/* ---- generation ------------------------------------------------------------ */

static int msl_made, msl_refused, binaries;

static void generate_case(const gl_case *c, int with_ocloc) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(c->src, "kernels.py", 1, gl_resolve, NULL, &err);
    CHECK(k != NULL);
    if (!k) return;
    tack_arg args[16];
    fill_args(c, args);
    tack_set_debug(c->debug);
    char *text = NULL;
    tack_status st = tack_kernel_generate(k, "metal-source", args, c->nargs, &text, &err);
    if (st) {
        /* Only what Metal lacks, said so. */
        int named = strstr(err.message, "fp64") || strstr(err.message, "-bit atomics") ||
                    strstr(err.message, "debug mode");
        if (!named) fprintf(stderr, "%s (metal-source): %s\n", c->name, err.message);
        CHECK(named && (st == TACK_ERR_TYPE || st == TACK_ERR_COMPILE));
        CHECK(!c->debug || strstr(err.message, "debug mode"));
        msl_refused++;
    } else {
        CHECK(text && strstr(text, "kernel void tack_") && !strstr(text, "goto") &&
              !strstr(text, "double") && strstr(text, "[[buffer(1)]]"));
        CHECK(!c->debug);
        msl_made++;
    }
    free(text);
    for (int t = 0; t < 2 && with_ocloc && have_ocloc; t++) {
        void *bin = NULL;
        size_t n = 0;
        const char *target = t ? "level_zero:dg2" : "level_zero:spirv";
        st = tack_kernel_generate_binary(k, target, args, c->nargs, &bin, &n, &err);
        if (st) fprintf(stderr, "%s (%s): %s\n", c->name, target, err.message);
        CHECK(st == TACK_OK && (t ? l0_is_native(bin, n) : l0_is_spirv(bin, n)) &&
              ((char *)bin)[n] == 0);
        binaries += st == TACK_OK;
        free(bin);
    }
    tack_set_debug(0);
    tack_kernel_free(k);
}

static void test_generate_cases(void) {
    static gl_case cases[128];
    int n = gl_cases(cases, 128), binary_cases = 0;
    for (int i = 0; i < n; i++) {
        int with = !strcmp(cases[i].name, "arith_i32") || !strcmp(cases[i].name, "loops") ||
                   !strcmp(cases[i].name, "farith_f32");
        binary_cases += with;
        generate_case(&cases[i], with);
    }
    printf("%d kernels as MSL, %d refused by the MSL dialect; %d SPIR-V / dg2 binaries from "
           "ocloc%s\n",
           msl_made, msl_refused, binaries, have_ocloc ? "" : " (ocloc absent: skipped)");
    CHECK(msl_made + msl_refused == n && msl_made > n / 2);
    if (have_ocloc) CHECK(binaries == 2 * binary_cases && binary_cases == 3);
}

static const char *SCALE =
    "def scale(x, out, a):\n    for i in range(x.shape[0]):\n        out[i] = x[i] * a\n";

static void test_generate_errors(void) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(k != NULL);
    if (!k) return;
    static double buf[16];
    int64_t shape[1] = {16};
    tack_arg args[3] = {tack_arg_array(buf, TACK_F64, 1, shape, 0),
                        tack_arg_array(buf, TACK_F64, 1, shape, 1), tack_arg_float(2.0)};
    void *obj = (void *)1;
    size_t n = 7;
    static const char *const bad[] = {"level_zero:", "level_zero:a b", "level_zero:0x",
                                      "level_zero:0xzz", "level_zero:-dg2"};
    for (int i = 0; i < 5; i++) {
        CHECK(tack_kernel_generate_binary(k, bad[i], args, 3, &obj, &n, &err) == TACK_ERR_VALUE);
        CHECK(!obj && !n && strstr(err.message, "is not an Intel GPU target") != NULL);
    }
    char *text = (char *)1;
    CHECK(tack_kernel_generate(k, "level_zero:spirv", args, 3, &text, &err) == TACK_ERR_VALUE);
    CHECK(!text && strstr(err.message, "tack_kernel_generate_binary") != NULL);
    /* f64 and Metal: named, nothing made. */
    CHECK(tack_kernel_generate(k, "metal-source", args, 3, &text, &err) == TACK_ERR_TYPE);
    CHECK(!text && strstr(err.message, "parameter 'x' is f64 but Metal has no fp64 support"));
    if (have_ocloc) {
        CHECK(tack_kernel_generate_binary(k, "level_zero:tgllp", args, 3, &obj, &n, &err) ==
              TACK_ERR_TYPE);
        CHECK(!obj && strstr(err.message, "is f64 but Intel GPU 'tgllp' has no fp64 support"));
        CHECK(tack_kernel_generate_binary(k, "level_zero:pvc", args, 3, &obj, &n, &err) == TACK_OK);
        CHECK(l0_is_native(obj, n));
        free(obj);
        CHECK(tack_kernel_generate_binary(k, "level_zero:nosuch", args, 3, &obj, &n, &err) ==
              TACK_ERR_VALUE);
        CHECK(strstr(err.message, "does not know the Intel GPU 'nosuch'") != NULL);
        /* ocloc's refusal carries its log and the kernel's name. */
        ir_func fake = {0};
        fake.name = "broken";
        void *nat = NULL, *spv = NULL;
        size_t nn = 0, sn = 0;
        CHECK(l0_ocloc_compile(&fake, "__kernel void f(__global float *p) { undeclared(); }",
                               "dg2", 1, &nat, &nn, &spv, &sn, &err) == TACK_ERR_COMPILE);
        CHECK(!nat && !spv && strstr(err.message, "kernel 'broken': ocloc rejected the generated code") &&
              strstr(err.message, "undeclared") && !strstr(err.message, "Command was"));
        printf("ocloc %s at %s\n", l0_ocloc_version(), l0_ocloc_path(NULL));
    }
    tack_kernel_free(k);
}

/* ---- the disk-cache record -------------------------------------------------- */

static const unsigned char SPV[20] = {0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0};

static void fake_native(unsigned char *p, size_t n) {
    memset(p, 0, n);
    memcpy(p, "\x7f" "ELF", 4);
    p[4] = 2;
    p[16] = 0x04;
    p[17] = 0xff;
}

static void test_artifact(void) {
    unsigned char nat[96];
    fake_native(nat, sizeof nat);
    ser_writer w = {0};
    l0_artifact_write("tack_x", "0x56a0", nat, sizeof nat, SPV, sizeof SPV, &w);
    CHECK(!w.failed);
    tack_error err;
    l0_record r;
    CHECK(l0_artifact_parse("k", w.data, w.len, &r, &err) == TACK_OK);
    CHECK(r.head.entry_len == 6 && !memcmp(r.head.entry, "tack_x", 6) && r.head.target_len == 6);
    CHECK(r.native_len == sizeof nat && !memcmp(r.native, nat, sizeof nat));
    CHECK(r.spirv_len == sizeof SPV && !memcmp(r.spirv, SPV, sizeof SPV));
    int refused = 0;
    for (size_t n = 0; n < w.len; n++)
        refused += l0_artifact_parse("k", w.data, n, &r, &err) == TACK_ERR_INTERNAL;
    CHECK(refused == (int)w.len);
    CHECK(strstr(err.message, "kernel 'k': the stored Level Zero code is damaged") != NULL);
    unsigned char *copy = malloc(w.len);
    /* magic, version, SPIR-V's magic, the native binary's ELF magic */
    const unsigned char *elf = memmem(w.data, w.len, "\x7f" "ELF", 4);
    CHECK(elf != NULL);
    const size_t flips[] = {0, 4, w.len - sizeof SPV, elf ? (size_t)(elf - (const unsigned char *)w.data) : 0};
    for (int i = 0; i < 4; i++) {
        memcpy(copy, w.data, w.len);
        copy[flips[i]] ^= 1;
        CHECK(l0_artifact_parse("k", copy, w.len, &r, &err) == TACK_ERR_INTERNAL);
    }
    free(copy);
    ser_writer_free(&w);
    /* No native binary (the driver made none): still a record. */
    ser_writer e = {0};
    l0_artifact_write("tack_x", "0x56a0", NULL, 0, SPV, sizeof SPV, &e);
    CHECK(l0_artifact_parse("k", e.data, e.len, &r, &err) == TACK_OK && r.native_len == 0);
    ser_writer_free(&e);
}

/* ---- a stand-in driver --------------------------------------------------------- */

#define H(x) ((void *)(uintptr_t)(x))

static struct fake {
    int inits, allocs, frees, modules, module_destroys, kernels, kernel_destroys, launches, copies;
    int contexts, context_destroys, lists, list_destroys, list_mode;
    ze_result_t fail_init, fail_native, fail_spirv, fail_launch, fail_alloc, fail_copy;
    uint32_t ndevices, module_flags;
    int last_format;
    unsigned char last_module[1 << 16];
    size_t last_module_len;
    char last_kernel[256], last_flags[128];
    uint32_t group[3];
    ze_group_count_t groups;
    unsigned char args[8][256];
    size_t arg_size[8];
    ze_command_list_handle_t launch_list;
    /* zeCommandListHostSynchronize: the waits, and the failure it reports
     * (a queued kernel's fault). */
    int host_syncs;
    ze_result_t fail_sync;
} fake = {.ndevices = 1, .module_flags = ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS};

static ze_result_t f_init(uint32_t flags) {
    CHECK(flags == ZE_INIT_FLAG_GPU_ONLY);
    fake.inits++;
    return fake.fail_init;
}
static ze_result_t f_drivers(uint32_t *n, ze_driver_handle_t *d) {
    if (d && *n) d[0] = H(0xd0);
    *n = 1;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_driver_props(ze_driver_handle_t d, ze_driver_properties_t *p) {
    CHECK(d == H(0xd0) && p->stype == ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES);
    p->driverVersion = 16900000;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_devices(ze_driver_handle_t d, uint32_t *n, ze_device_handle_t *devs) {
    (void)d;
    uint32_t k = *n < fake.ndevices ? *n : fake.ndevices;
    for (uint32_t i = 0; devs && i < k; i++) devs[i] = H(0xde0 + i);
    *n = devs ? k : fake.ndevices;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_props(ze_device_handle_t d, ze_device_properties_t *p) {
    CHECK(p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES);
    p->type = ZE_DEVICE_TYPE_GPU;
    p->deviceId = 0x56a0;
    p->maxMemAllocSize = (uint64_t)4 << 30;
    p->numSlices = 8;
    p->numSubslicesPerSlice = 4;
    p->numEUsPerSubslice = 16;
    snprintf(p->name, sizeof p->name, "Fake Arc A770 %d", (int)((uintptr_t)d - 0xde0));
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_compute(ze_device_handle_t d, ze_device_compute_properties_t *p) {
    (void)d;
    CHECK(p->stype == ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES);
    p->maxTotalGroupSize = 1024;
    p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1024;
    p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = 0xffffffffu;
    p->maxSharedLocalMemory = 65536;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_module_props(ze_device_handle_t d, ze_device_module_properties_t *p) {
    (void)d;
    CHECK(p->stype == ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES);
    p->flags = fake.module_flags;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_mem_props(ze_device_handle_t d, uint32_t *n, ze_device_memory_properties_t *p) {
    (void)d;
    CHECK(*n >= 1 && p[0].stype == ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES);
    p[0].totalSize = (uint64_t)16 << 30;
    *n = 1;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_ctx(ze_driver_handle_t d, const ze_context_desc_t *desc, ze_context_handle_t *c) {
    CHECK(d == H(0xd0) && desc->stype == ZE_STRUCTURE_TYPE_CONTEXT_DESC);
    fake.contexts++;
    *c = H(0xc0);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_ctx_destroy(ze_context_handle_t c) {
    CHECK(c == H(0xc0));
    fake.context_destroys++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_list(ze_context_handle_t c, ze_device_handle_t d, const ze_command_queue_desc_t *q,
                          ze_command_list_handle_t *l) {
    CHECK(c == H(0xc0) && d == H(0xde0) && q->stype == ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC);
    fake.list_mode = q->mode;
    fake.lists++;
    *l = H(0x11);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_list_destroy(ze_command_list_handle_t l) {
    CHECK(l == H(0x11));
    fake.list_destroys++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_launch(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *g,
                            ze_event_handle_t e, uint32_t nw, ze_event_handle_t *w) {
    CHECK(k == H(0x4e) && !e && !nw && !w);
    if (fake.fail_launch) return fake.fail_launch;
    fake.launch_list = l;
    fake.groups = *g;
    fake.launches++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_copy(ze_command_list_handle_t l, void *dst, const void *src, size_t n,
                          ze_event_handle_t e, uint32_t nw, ze_event_handle_t *w) {
    CHECK(l == H(0x11) && !e && !nw && !w);
    if (fake.fail_copy) return fake.fail_copy;
    memcpy(dst, src, n);
    fake.copies++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_module(ze_context_handle_t c, ze_device_handle_t d, const ze_module_desc_t *m,
                            ze_module_handle_t *out, ze_module_build_log_handle_t *log) {
    CHECK(c == H(0xc0) && d == H(0xde0) && m->stype == ZE_STRUCTURE_TYPE_MODULE_DESC);
    fake.last_format = m->format;
    fake.last_module_len = m->inputSize;
    if (m->inputSize <= sizeof fake.last_module) memcpy(fake.last_module, m->pInputModule, m->inputSize);
    snprintf(fake.last_flags, sizeof fake.last_flags, "%s", m->pBuildFlags ? m->pBuildFlags : "");
    if (log) *log = H(0x10c);
    ze_result_t r = m->format == ZE_MODULE_FORMAT_NATIVE ? fake.fail_native : fake.fail_spirv;
    if (r) return r;
    fake.modules++;
    *out = H(0x3d);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_module_destroy(ze_module_handle_t m) {
    CHECK(m == H(0x3d));
    fake.module_destroys++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_log(ze_module_build_log_handle_t l, size_t *n, char *s) {
    CHECK(l == H(0x10c));
    static const char text[] = "error: the stand-in refuses this module";
    if (s) memcpy(s, text, sizeof text);
    *n = sizeof text;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_log_destroy(ze_module_build_log_handle_t l) { CHECK(l == H(0x10c)); return ZE_RESULT_SUCCESS; }
/* The driver's own binary of a module built from SPIR-V. */
static ze_result_t f_native(ze_module_handle_t m, size_t *n, uint8_t *bytes) {
    CHECK(m == H(0x3d));
    if (bytes) fake_native(bytes, *n);
    *n = 128;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_kernel(ze_module_handle_t m, const ze_kernel_desc_t *d, ze_kernel_handle_t *k) {
    CHECK(m == H(0x3d) && d->stype == ZE_STRUCTURE_TYPE_KERNEL_DESC);
    snprintf(fake.last_kernel, sizeof fake.last_kernel, "%s", d->pKernelName);
    fake.kernels++;
    *k = H(0x4e);
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_kernel_destroy(ze_kernel_handle_t k) {
    CHECK(k == H(0x4e));
    fake.kernel_destroys++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_group(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z) {
    CHECK(k == H(0x4e));
    fake.group[0] = x, fake.group[1] = y, fake.group[2] = z;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_arg(ze_kernel_handle_t k, uint32_t i, size_t n, const void *v) {
    CHECK(k == H(0x4e) && i < 8 && n <= 256);
    if (i < 8 && n <= 256) {
        memcpy(fake.args[i], v, n);
        fake.arg_size[i] = n;
    }
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_alloc(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *d, size_t n,
                           size_t align, ze_device_handle_t dev, void **p) {
    CHECK(c == H(0xc0) && d->stype == ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC && align == 64 &&
          dev == H(0xde0));
    if (fake.fail_alloc) return fake.fail_alloc;
    *p = malloc(n);
    fake.allocs++;
    return ZE_RESULT_SUCCESS;
}
static ze_result_t f_free(ze_context_handle_t c, void *p) {
    CHECK(c == H(0xc0));
    free(p);
    fake.frees++;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t f_host_sync(ze_command_list_handle_t l, uint64_t timeout) {
    CHECK(l == H(0x11) && timeout == UINT64_MAX);
    if (fake.fail_sync) return fake.fail_sync;
    fake.host_syncs++;
    return ZE_RESULT_SUCCESS;
}

static const ze_api fake_api = {
    .Init = f_init, .DriverGet = f_drivers, .DriverGetProperties = f_driver_props,
    .DeviceGet = f_devices, .DeviceGetProperties = f_props, .DeviceGetComputeProperties = f_compute,
    .DeviceGetModuleProperties = f_module_props, .DeviceGetMemoryProperties = f_mem_props,
    .ContextCreate = f_ctx, .ContextDestroy = f_ctx_destroy, .CommandListCreateImmediate = f_list,
    .CommandListDestroy = f_list_destroy, .CommandListAppendLaunchKernel = f_launch,
    .CommandListAppendMemoryCopy = f_copy, .ModuleCreate = f_module, .ModuleDestroy = f_module_destroy,
    .ModuleBuildLogGetString = f_log, .ModuleBuildLogDestroy = f_log_destroy,
    .ModuleGetNativeBinary = f_native, .KernelCreate = f_kernel, .KernelDestroy = f_kernel_destroy,
    .KernelSetGroupSize = f_group, .KernelSetArgumentValue = f_arg, .MemAllocDevice = f_alloc,
    .MemFree = f_free, .CommandListHostSynchronize = f_host_sync,
};

static uint64_t f32_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

static void test_groups(backend *b) {
    uint32_t g[3], s[3];
    l0_groups(b, 0, 10, 1, 1, g, s);
    CHECK(g[0] == 1 && g[1] == 1 && g[2] == 1 && s[0] == 256 && s[1] == 1 && s[2] == 1);
    l0_groups(b, 0, (int64_t)1 << 40, 1, 1, g, s);
    CHECK(g[0] == 512 * 8 && s[0] == 256); /* 512 EUs, a few groups each; the rest strides */
    l0_groups(b, 1, 1000, 3, 1, g, s);
    CHECK(s[1] == 4 && s[0] == 64 && g[1] == 1 && g[0] == 16);
    l0_groups(b, 2, 5, 7, 9, g, s);
    CHECK(s[2] == 16 && s[1] == 8 && s[0] == 2 && g[2] == 1 && g[1] == 1 && g[0] == 3);
}

static void test_fake_driver(void) {
    ze_set_for_testing(&fake_api);
    tack_error err;
    backend *b = NULL;
    fake.ndevices = 0;
    CHECK(backend_level_zero.open(0, 0, &b, &err) == TACK_ERR_DEVICE && !b);
    CHECK(strstr(err.message, "no Level Zero device: the drivers find no GPU") != NULL);
    fake.ndevices = 1;
    fake.fail_init = ZE_RESULT_ERROR_UNINITIALIZED;
    CHECK(backend_level_zero.open(0, 0, &b, &err) == TACK_ERR_DEVICE && !b);
    CHECK(strstr(err.message, "zeInit: ZE_RESULT_ERROR_UNINITIALIZED") != NULL);
    fake.fail_init = 0;
    CHECK(backend_level_zero.open(2, 0, &b, &err) == TACK_ERR_VALUE && !b);
    CHECK(strstr(err.message, "there is no Level Zero device 2: 1 device found "
                              "(\"level_zero:0\" is Fake Arc A770 0)") != NULL);
    CHECK(backend_level_zero.open(0, 0, &b, &err) == TACK_OK && b);
    if (!b) goto done;
    /* zeCommandListHostSynchronize: an asynchronous list, launches queued. */
    CHECK(fake.list_mode == ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS && fake.lists == 1);
    backend_caps caps;
    backend_level_zero.caps(b, &caps);
    CHECK(caps.queued_launch == 1);
    CHECK(!caps.host_memory && caps.locked_dispatch && caps.fp64 && caps.atomics64 && !caps.images);
    CHECK(caps.compute_units == 512 && caps.max_workgroup == 1024 && caps.local_mem_bytes == 65536);
    CHECK(caps.global_mem_bytes == (int64_t)16 << 30 && caps.max_alloc_bytes == (int64_t)4 << 30);
    printf("stand-in: %s\n", backend_level_zero.describe(b));
    CHECK(strstr(backend_level_zero.describe(b), "Fake Arc A770 0 (Level Zero, device id 0x56a0") != NULL);
    const char *target = backend_level_zero.cache_target(b);
    CHECK(strstr(target, "id=0x56a0") && strstr(target, "driver=16900000") &&
          strstr(target, "ocloc=") && strstr(target, "-cl-std=CL1.2") && strstr(target, "fp64=1"));
    test_groups(b);

    /* Memory: copies on the device's list, each waited for. */
    void *h = NULL;
    CHECK(backend_level_zero.mem_alloc(b, 64, &h, &err) == TACK_OK && h);
    float in[16], back[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i * 1.5f;
    CHECK(backend_level_zero.mem_write(b, h, 0, in, sizeof in, &err) == TACK_OK && fake.copies == 1);
    CHECK(fake.host_syncs == 1);
    CHECK(backend_level_zero.mem_read(b, h, 8, back, 8, &err) == TACK_OK && back[0] == in[2] &&
          back[1] == in[3]);
    fake.fail_alloc = ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    void *none = (void *)1;
    CHECK(backend_level_zero.mem_alloc(b, 1 << 20, &none, &err) == TACK_ERR_NOMEM && !none);
    CHECK(strstr(err.message, "zeMemAllocDevice failed: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY") != NULL);
    fake.fail_alloc = 0;
    CHECK(backend_level_zero.mem_alloc(b, (size_t)5 << 30, &none, &err) == TACK_ERR_NOMEM);
    CHECK(strstr(err.message, "its largest allocation is") != NULL);
    fake.fail_copy = ZE_RESULT_ERROR_DEVICE_LOST;
    CHECK(backend_level_zero.mem_write(b, h, 0, in, 4, &err) == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "zeCommandListAppendMemoryCopy failed: ZE_RESULT_ERROR_DEVICE_LOST") != NULL);
    fake.fail_copy = 0;
    backend_level_zero.mem_free(b, h);

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
    if (f && have_ocloc) {
        CHECK(backend_level_zero.build(b, f, "5ca1e", &code, &ns, &err) == TACK_OK && code);
        if (!code) fprintf(stderr, "build: %s\n", err.message);
    }
    if (code) {
        /* The native binary ocloc made for the device id, as it is. */
        CHECK(fake.last_format == ZE_MODULE_FORMAT_NATIVE && !strcmp(fake.last_kernel, "tack_5ca1e"));
        CHECK(fake.last_module_len == code->native_len &&
              !memcmp(fake.last_module, code->native, code->native_len) && l0_is_native(code->native, code->native_len));
        CHECK(l0_is_spirv(code->spirv, code->spirv_len) && !code->from_spirv && ns > 0);
        CHECK(code->g.narrays == 2 && code->g.arrays[0] == 0 && code->g.arrays[1] == 1);
        ser_writer w = {0};
        CHECK(backend_level_zero.artifact(b, code, &w) == 0);
        unsigned long long binary_loads = backend_stats.binary_loads, source_builds = backend_stats.source_builds;
        backend_code *loaded = NULL;
        CHECK(backend_level_zero.load(b, f, w.data, w.len, &loaded, &err) == TACK_OK && loaded);
        CHECK(fake.last_format == ZE_MODULE_FORMAT_NATIVE && backend_stats.binary_loads == binary_loads + 1);
        backend_level_zero.release(b, loaded);
        /* The driver refuses the stored binary: the SPIR-V, and its log. */
        fake.fail_native = ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
        CHECK(backend_level_zero.load(b, f, w.data, w.len, &loaded, &err) == TACK_OK && loaded);
        CHECK(fake.last_format == ZE_MODULE_FORMAT_IL_SPIRV && loaded->from_spirv &&
              backend_stats.source_builds == source_builds + 1);
        CHECK(strstr(fake.last_flags, "-cl-fp32-correctly-rounded-divide-sqrt") != NULL);
        CHECK(loaded->native_len == 128 && l0_is_native(loaded->native, 128)); /* the driver's */
        backend_level_zero.release(b, loaded);
        fake.fail_spirv = ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
        CHECK(backend_level_zero.load(b, f, w.data, w.len, &loaded, &err) == TACK_ERR_DEVICE && !loaded);
        printf("both refused: %s\n", err.message);
        CHECK(strstr(err.message, "kernel 'scale' (SPIR-V): zeModuleCreate failed: "
                                  "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:\nerror: the stand-in refuses") &&
              strstr(err.message, "after the native binary") &&
              strstr(err.message, "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY"));
        fake.fail_native = fake.fail_spirv = 0;
        /* A record for another device is damage. */
        snprintf(b->ocloc_device, sizeof b->ocloc_device, "0x4905");
        CHECK(backend_level_zero.load(b, f, w.data, w.len, &loaded, &err) == TACK_ERR_INTERNAL);
        CHECK(strstr(err.message, "is for device 0x56a0, the device is 0x4905") != NULL);
        snprintf(b->ocloc_device, sizeof b->ocloc_device, "0x56a0");
        ser_writer_free(&w);

        /* A launch: the pack, then the device pointers; 256-item groups. */
        void *x = NULL, *out = NULL;
        CHECK(backend_level_zero.mem_alloc(b, sizeof host, &x, &err) == TACK_OK);
        CHECK(backend_level_zero.mem_alloc(b, sizeof host, &out, &err) == TACK_OK);
        slots[0] = (uint64_t)(uintptr_t)x;
        slots[1] = (uint64_t)(uintptr_t)out;
        int64_t range[BACKEND_RANGE_LEN];
        backend_call call = {"scale", slots, (const int64_t(*)[TACK_MAX_NDIM])dims, 3, 0, range, NULL};
        CHECK(backend_level_zero.range(b, code, &call, range, &err) == TACK_OK);
        int host_syncs = fake.host_syncs;
        CHECK(backend_level_zero.launch(b, code, &call, &err) == TACK_OK);
        CHECK(fake.launches == 1 && fake.launch_list == H(0x11));
        CHECK(fake.host_syncs == host_syncs); /* queued: no wait */
        int64_t pack[GPU_PACK_SCALARS + 3];
        CHECK(fake.arg_size[0] == sizeof pack);
        memcpy(pack, fake.args[0], sizeof pack);
        CHECK(pack[GPU_PACK_START] == 0 && pack[GPU_PACK_STEP] == 1 && pack[GPU_PACK_COUNT] == 1000 &&
              (uint64_t)pack[GPU_PACK_SCALARS + 2] == f32_bits(2.0f));
        void *p1, *p2;
        memcpy(&p1, fake.args[1], 8);
        memcpy(&p2, fake.args[2], 8);
        CHECK(fake.arg_size[1] == 8 && p1 == x && p2 == out);
        CHECK(fake.group[0] == 256 && fake.groups.groupCountX == 4 && fake.groups.groupCountY == 1);
        int64_t empty[BACKEND_RANGE_LEN] = {5, 5, 1, 1, 1};
        backend_call none_call = call;
        none_call.range = empty;
        CHECK(backend_level_zero.launch(b, code, &none_call, &err) == TACK_OK && fake.launches == 1);
        fake.fail_launch = ZE_RESULT_ERROR_DEVICE_LOST;
        CHECK(backend_level_zero.launch(b, code, &call, &err) == TACK_ERR_DEVICE);
        CHECK(strstr(err.message, "kernel 'scale': zeCommandListAppendLaunchKernel failed: "
                                  "ZE_RESULT_ERROR_DEVICE_LOST") != NULL);
        fake.fail_launch = 0;
        /* A fault in the queued kernel surfaces at the next wait (a copy),
         * naming it, once; synchronize and the runtime's per-launch wait
         * (queue_synchronize) too. */
        fake.fail_sync = ZE_RESULT_ERROR_DEVICE_LOST;
        float got[2];
        CHECK(backend_level_zero.mem_read(b, out, 0, got, 8, &err) == TACK_ERR_DEVICE);
        printf("queued fault: %s\n", err.message);
        CHECK(strstr(err.message, "kernel 'scale' (queued earlier, reported at synchronization): "
                                  "reading 8 bytes at offset 0: zeCommandListHostSynchronize "
                                  "failed: ZE_RESULT_ERROR_DEVICE_LOST") != NULL);
        CHECK(backend_level_zero.mem_read(b, out, 0, got, 8, &err) == TACK_ERR_DEVICE &&
              !strstr(err.message, "'scale'"));
        fake.fail_sync = 0;
        CHECK(backend_level_zero.launch(b, code, &call, &err) == TACK_OK);
        fake.fail_sync = ZE_RESULT_ERROR_DEVICE_LOST;
        CHECK(backend_level_zero.synchronize(b, &err) == TACK_ERR_DEVICE &&
              strstr(err.message, "kernel 'scale' (queued earlier"));
        fake.fail_sync = 0;
        CHECK(backend_level_zero.launch(b, code, &call, &err) == TACK_OK);
        fake.fail_sync = ZE_RESULT_ERROR_DEVICE_LOST;
        CHECK(backend_level_zero.queue_synchronize(b, NULL, &err) == TACK_ERR_DEVICE &&
              strstr(err.message, "kernel 'scale' (queued earlier"));
        fake.fail_sync = 0;
        /* zeMemFree does not wait: a free after a queued launch does. */
        CHECK(backend_level_zero.launch(b, code, &call, &err) == TACK_OK);
        host_syncs = fake.host_syncs;
        backend_level_zero.mem_free(b, x);
        backend_level_zero.mem_free(b, out);
        CHECK(fake.host_syncs == host_syncs + 1);
        backend_level_zero.release(b, code);
        CHECK(fake.kernels == fake.kernel_destroys && fake.modules == fake.module_destroys);
    } else if (!have_ocloc) {
        printf("ocloc absent: builds over the stand-in driver skipped\n");
    }
    if (f) {
        char *text = NULL;
        CHECK(backend_level_zero.inspect(b, f, "abc", TACK_INSPECT_LLVM, &text, &err) == TACK_OK);
        CHECK(text && strstr(text, "__kernel void tack_abc("));
        free(text);
        CHECK(backend_level_zero.inspect(b, f, "abc", TACK_INSPECT_ASM, &text, &err) == TACK_ERR_VALUE);
    }
    ir_func_free(f);
    backend_level_zero.close(b);
    b = NULL;
    CHECK(fake.list_destroys == 1 && fake.context_destroys == 1);

    /* A device without fp64: an f64 kernel is refused before ocloc runs. */
    fake.module_flags = 0;
    CHECK(backend_level_zero.open(0, 0, &b, &err) == TACK_OK && b);
    if (b) {
        backend_level_zero.caps(b, &caps);
        CHECK(!caps.fp64 && !caps.atomics64 && strstr(backend_level_zero.cache_target(b), "fp64=0"));
        static double dhost[16];
        int64_t dshape[1] = {16};
        tack_arg dargs[3] = {tack_arg_array(dhost, TACK_F64, 1, dshape, 0),
                             tack_arg_array(dhost, TACK_F64, 1, dshape, 1), tack_arg_float(2.0)};
        ir_func *g = gl_variant(SCALE, &ast, dargs, 3, 0, slots, dims, &err);
        CHECK(g != NULL);
        if (g) {
            CHECK(backend_level_zero.build(b, g, "d", &code, &ns, &err) == TACK_ERR_TYPE && !code);
            CHECK(strstr(err.message, "parameter 'x' is f64 but device 'Fake Arc A770 0' has no "
                                      "fp64 support") != NULL);
        }
        ir_func_free(g);
        backend_level_zero.close(b);
    }
    fake.module_flags = ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
    arena_free(&ast);

    /* A loader before Level Zero 1.6 (no zeCommandListHostSynchronize):
     * a synchronous list, every launch waited for by its append. */
    static ze_api old_api;
    old_api = fake_api;
    old_api.CommandListHostSynchronize = NULL;
    ze_set_for_testing(&old_api);
    CHECK(backend_level_zero.open(0, 0, &b, &err) == TACK_OK && b);
    if (b) {
        backend_level_zero.caps(b, &caps);
        CHECK(fake.list_mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS && !caps.queued_launch);
        CHECK(backend_level_zero.synchronize(b, &err) == TACK_OK);
        backend_level_zero.close(b);
    }
    ze_set_for_testing(&fake_api);

    /* Through the runtime: a device, device arrays, two launches of one
     * variant, and the debug variant. */
    if (have_ocloc) {
        tack_device *dev = tack_device_create("level_zero", 0, &err);
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
            int syncs0 = fake.host_syncs;
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            CHECK(fake.launches == launches + 2 && tack_kernel_num_variants(k, dev) == 1);
            CHECK(fake.host_syncs == syncs0); /* queued */
            float head[4];
            fake.fail_sync = ZE_RESULT_ERROR_DEVICE_LOST;
            CHECK(tack_device_read(dev, out, 0, head, sizeof head, &err) == TACK_ERR_DEVICE &&
                  strstr(err.message, "kernel 'scale' (queued earlier"));
            fake.fail_sync = 0;
            void *p1;
            memcpy(&p1, fake.args[1], 8);
            CHECK(p1 == x);
            tack_set_debug(1);
            syncs0 = fake.host_syncs;
            CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
            CHECK(fake.host_syncs > syncs0); /* debug mode waits for each launch */
            if (err.status) fprintf(stderr, "debug: %s\n", err.message);
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
    ze_set_for_testing(NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *why = NULL;
    have_ocloc = l0_ocloc_path(&why) != NULL;
    if (!have_ocloc) printf("ocloc absent, binaries not made: %s\n", why);
    test_no_device();
    test_artifact();
    test_generate_errors();
    test_fake_driver();
    test_generate_cases();
    return CHECK_DONE();
}

/* hiprtc.c - HIP C++ to an AMDGPU code object with hipRTC (gpu/rtc.c's
 * flow; here where the library is and what its failures say).  Needs ROCm's
 * libraries only, no GPU: this is what tack.hip.compile runs offline and
 * what a HIP device's build runs before the runtime loads the code. */
#include "hip.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"
#include "backend/gpu/rtc.h"

int hip_arch_valid(const char *arch) {
    if (!arch || strncmp(arch, "gfx", 3)) return 0;
    const char *p = arch + 3;
    int n = 0;
    while (isdigit((unsigned char)p[n]) || (p[n] >= 'a' && p[n] <= 'f')) n++;
    if (n < 3 || n > 5 || !isdigit((unsigned char)p[0])) return 0;
    p += n;
    /* Target features: ":sramecc+", ":xnack-". */
    while (*p == ':') {
        p++;
        int k = 0;
        while (islower((unsigned char)p[k])) k++;
        if (!k || (p[k] != '+' && p[k] != '-')) return 0;
        p += k + 1;
    }
    return !*p;
}

/* ---- hipRTC ------------------------------------------------------------ */

static void *open_rtc(gpu_rtc *r) {
    /* An explicit file first, then ROCm 6's own library, then the runtime
     * that holds hipRTC in ROCm 5. */
    void *lib = NULL;
    const char *explicit = getenv("TACK_HIPRTC");
    if (explicit && *explicit) {
        lib = dlopen(explicit, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            snprintf(r->error, sizeof r->error, "hipRTC could not be loaded from TACK_HIPRTC=%s",
                     explicit);
            return NULL;
        }
        snprintf(r->where, sizeof r->where, "%s", explicit);
    }
    static const char *const names[] = {"libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.6",
                                        "libamdhip64.so.5", "libamdhip64.so"};
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
        void *cand = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (cand && !dlsym(cand, "hiprtcCreateProgram")) {
            dlclose(cand);
            cand = NULL;
        }
        if (cand) {
            lib = cand;
            snprintf(r->where, sizeof r->where, "%s", names[i]);
        }
    }
    if (!lib) {
        snprintf(r->error, sizeof r->error,
                 "hipRTC was not found (libhiprtc.so or libamdhip64.so on the loader path; "
                 "install ROCm's HIP runtime, e.g. Debian's libamdhip64-5 and "
                 "libhiprtc-builtins5, or set TACK_HIPRTC to the library)");
        return NULL;
    }
    return lib;
}

static gpu_rtc rtc;
static void load_rtc(void) { gpu_rtc_fill(&rtc); }

/* What hipRTC's failures say that NVRTC's do not. */
static tack_status compile_failed(gpu_rtc *r, gpu_rtc_prog p, const char *kernel,
                                  const char *arch, int code, tack_error *err) {
    char *log = gpu_rtc_log(r, p);
    tack_status st = backend_error(
        err, code == GPU_RTC_ERROR_INVALID_OPTION ? TACK_ERR_VALUE : TACK_ERR_DEVICE,
        "kernel '%s': hiprtcCompileProgram for %s failed: %s%s%s", kernel, arch,
        r->api.GetErrorString(code), log && *log ? ": " : "", log ? log : "");
    free(log);
    return st;
}

/* What comes back must be a code object the runtime can load. */
static tack_status check(const char *kernel, const char *arch, const char *code, size_t n,
                         tack_error *err) {
    if (hip_is_code_object(code, n)) return TACK_OK;
    return backend_error(err, TACK_ERR_DEVICE,
                         "kernel '%s': hipRTC %s returned %zu bytes for %s that are not an "
                         "AMDGPU code object",
                         kernel, rtc.version, n, arch);
}

static gpu_rtc rtc = {.name = "hipRTC", .language = "HIP", .ext = ".hip", .prefix = "hiprtc",
                      .code = "Code", .open = open_rtc, .load = load_rtc,
                      .compile_failed = compile_failed, .check = check,
                      .once = PTHREAD_ONCE_INIT};

const gpu_rtc_api *hip_rtc_load(const char **why) { return gpu_rtc_load(&rtc, why); }
const char *hip_rtc_path(void) { return gpu_rtc_path(&rtc); }
const char *hip_rtc_version(void) { return gpu_rtc_version(&rtc); }

/* Whether ROCm knows the ISA named by arch (up to its first ':'); the
 * known ones listed in `list` when it does not. */
static int isa_known(const char *arch, char *list, size_t cap) {
    const char *const *names;
    int n;
    if (!hip_known_isas(&names, &n)) return 1; /* cannot ask: hipRTC answers */
    size_t base = strcspn(arch, ":");
    list[0] = 0;
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (strlen(names[i]) == base && !strncmp(names[i], arch, base)) return 1;
        int k = snprintf(list + used, cap - used, "%s%s", i ? ", " : "", names[i]);
        if (k < 0 || (size_t)k >= cap - used) break;
        used += (size_t)k;
    }
    return 0;
}

tack_status hip_compile(const char *kernel_name, const char *source, const char *arch,
                        void **object, size_t *len, tack_error *err) {
    *object = NULL;
    *len = 0;
    if (!hip_arch_valid(arch))
        return backend_error(err, TACK_ERR_VALUE,
                             "kernel '%s': '%s' is not an AMD GPU architecture (expected e.g. "
                             "\"gfx90a\", \"gfx1030\" or \"gfx90a:xnack-\")",
                             kernel_name, arch ? arch : "(null)");
    const char *why;
    if (!gpu_rtc_load(&rtc, &why))
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s': cannot compile HIP code: %s",
                             kernel_name, why);
    char known[1024];
    if (!isa_known(arch, known, sizeof known))
        return backend_error(err, TACK_ERR_VALUE,
                             "kernel '%s': hipRTC %s cannot compile for %s: ROCm's code object "
                             "manager knows %s",
                             kernel_name, hip_rtc_version(), arch, known);
    char arch_opt[300];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    char *out = NULL;
    tack_status st = gpu_rtc_compile(&rtc, kernel_name, source, gpu_dialect_hip()->build_options,
                                     arch_opt, arch, &out, len, err);
    *object = out;
    return st;
}

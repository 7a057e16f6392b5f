/* hiprtc.c - HIP C++ to an AMDGPU code object with hipRTC.  Needs ROCm's
 * libraries only, no GPU: this is what tack.hip.compile runs offline and
 * what a HIP device's build runs before the runtime loads the code. */
#include "hip.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"

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

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char version[32] = "none";

static void read_version(void) {
    const hip_rtc_api *rtc = hip_rtc_load(NULL);
    int major = 0, minor = 0;
    if (rtc && rtc->Version(&major, &minor) == HIPRTC_SUCCESS)
        snprintf(version, sizeof version, "%d.%d", major, minor);
}

const char *hip_rtc_version(void) {
    pthread_once(&version_once, read_version);
    return version;
}

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

static char *program_log(const hip_rtc_api *rtc, hiprtcProgram p) {
    size_t n = 0;
    if (rtc->GetProgramLogSize(p, &n) != HIPRTC_SUCCESS) n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (!n || rtc->GetProgramLog(p, log) != HIPRTC_SUCCESS) n = 0;
    log[n] = 0;
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == 0)) log[--n] = 0;
    return log;
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
    const hip_rtc_api *rtc = hip_rtc_load(&why);
    if (!rtc)
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s': cannot compile HIP code: %s",
                             kernel_name, why);
    char known[1024];
    if (!isa_known(arch, known, sizeof known))
        return backend_error(err, TACK_ERR_VALUE,
                             "kernel '%s': hipRTC %s cannot compile for %s: ROCm's code object "
                             "manager knows %s",
                             kernel_name, hip_rtc_version(), arch, known);
    char arch_opt[300], opts[256];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    snprintf(opts, sizeof opts, "%s", gpu_dialect_hip()->build_options);
    const char *argv[17];
    int argc = 0;
    for (char *tok = strtok(opts, " "); tok && argc < 15; tok = strtok(NULL, " ")) argv[argc++] = tok;
    argv[argc++] = arch_opt;

    char name[160];
    snprintf(name, sizeof name, "%s.hip", kernel_name);
    hiprtcProgram p = NULL;
    hiprtcResult r = rtc->CreateProgram(&p, source, name, 0, NULL, NULL);
    if (r != HIPRTC_SUCCESS)
        return backend_error(err, r == HIPRTC_ERROR_OUT_OF_MEMORY ? TACK_ERR_NOMEM : TACK_ERR_DEVICE,
                             "kernel '%s': hiprtcCreateProgram failed: %s", kernel_name,
                             rtc->GetErrorString(r));
    tack_status st = TACK_OK;
    r = rtc->CompileProgram(p, argc, argv);
    if (r == HIPRTC_ERROR_COMPILATION) {
        /* Our emitter wrote code hipRTC refused: its log whole, for the
         * bug report. */
        char *log = program_log(rtc, p);
        st = backend_error(err, TACK_ERR_COMPILE,
                           "kernel '%s': hipRTC rejected the generated code:\n%s", kernel_name,
                           log ? log : "(no log: out of memory)");
        free(log);
    } else if (r != HIPRTC_SUCCESS) {
        char *log = program_log(rtc, p);
        st = backend_error(err, r == HIPRTC_ERROR_INVALID_OPTION ? TACK_ERR_VALUE : TACK_ERR_DEVICE,
                           "kernel '%s': hiprtcCompileProgram for %s failed: %s%s%s", kernel_name,
                           arch, rtc->GetErrorString(r), log && *log ? ": " : "", log ? log : "");
        free(log);
    }
    size_t n = 0;
    if (!st && (r = rtc->GetCodeSize(p, &n)) != HIPRTC_SUCCESS)
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': hiprtcGetCodeSize failed: %s",
                           kernel_name, rtc->GetErrorString(r));
    char *out = NULL;
    if (!st && !(out = malloc(n + 1))) /* NUL after the bytes: see backend_generate */
        st = backend_error(err, TACK_ERR_NOMEM, "kernel '%s': out of memory compiling HIP code",
                           kernel_name);
    if (!st && (r = rtc->GetCode(p, out)) != HIPRTC_SUCCESS)
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': hiprtcGetCode failed: %s",
                           kernel_name, rtc->GetErrorString(r));
    /* What comes back must be a code object the runtime can load. */
    if (!st && !hip_is_code_object(out, n))
        st = backend_error(err, TACK_ERR_DEVICE,
                           "kernel '%s': hipRTC %s returned %zu bytes for %s that are not an "
                           "AMDGPU code object",
                           kernel_name, hip_rtc_version(), n, arch);
    rtc->DestroyProgram(&p);
    if (!st) out[n] = 0;
    if (st) {
        free(out);
        return st;
    }
    *object = out;
    *len = n;
    return TACK_OK;
}

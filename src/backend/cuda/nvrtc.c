/* nvrtc.c - CUDA C to PTX with NVRTC.  Needs the toolkit's library only,
 * no driver and no GPU: this is what tack.cuda.compile runs offline and
 * what a CUDA device's build runs before the driver loads the PTX. */
#include "cuda.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"


int cuda_arch_valid(const char *arch) {
    if (!arch || strncmp(arch, "sm_", 3)) return 0;
    const char *p = arch + 3;
    int digits = 0;
    while (isdigit((unsigned char)p[digits])) digits++;
    if (digits < 2 || digits > 3) return 0;
    p += digits;
    return !*p || ((*p == 'a' || *p == 'f') && !p[1]);
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char version[32] = "none";

static void read_version(void) {
    const cuda_nvrtc_api *nv = cuda_nvrtc_load(NULL);
    int major = 0, minor = 0;
    if (nv && nv->Version(&major, &minor) == NVRTC_SUCCESS)
        snprintf(version, sizeof version, "%d.%d", major, minor);
}

const char *cuda_nvrtc_version(void) {
    pthread_once(&version_once, read_version);
    return version;
}

/* The dialect's options, split on spaces into argv (at most 15). */
static int split_options(char *buf, size_t cap, const char *argv[16]) {
    snprintf(buf, cap, "%s", gpu_dialect_cuda.build_options);
    int n = 0;
    for (char *tok = strtok(buf, " "); tok && n < 15; tok = strtok(NULL, " ")) argv[n++] = tok;
    return n;
}

static char *program_log(const cuda_nvrtc_api *nv, nvrtcProgram p) {
    size_t n = 0;
    if (nv->GetProgramLogSize(p, &n) != NVRTC_SUCCESS) n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (!n || nv->GetProgramLog(p, log) != NVRTC_SUCCESS) n = 0;
    log[n] = 0;
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == 0)) log[--n] = 0;
    return log;
}

tack_status cuda_compile_ptx(const char *kernel_name, const char *source, const char *arch,
                             char **ptx, tack_error *err) {
    *ptx = NULL;
    if (!cuda_arch_valid(arch))
        return backend_error(err, TACK_ERR_VALUE,
                    "kernel '%s': '%s' is not a CUDA architecture (expected e.g. \"sm_80\", "
                    "\"sm_90\" or \"sm_90a\")",
                    kernel_name, arch ? arch : "(null)");
    const char *why;
    const cuda_nvrtc_api *nv = cuda_nvrtc_load(&why);
    if (!nv)
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s': cannot compile CUDA code: %s", kernel_name,
                    why);
    /* A virtual architecture: NVRTC writes PTX for it, which the driver
     * (or ptxas) turns into the device's code. */
    char arch_opt[48], tmp[256];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=compute_%s", arch + 3);
    const char *argv[17];
    int argc = split_options(tmp, sizeof tmp, argv);
    argv[argc++] = arch_opt;

    char name[160];
    snprintf(name, sizeof name, "%s.cu", kernel_name);
    nvrtcProgram p = NULL;
    nvrtcResult r = nv->CreateProgram(&p, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return backend_error(err, r == 1 /* NVRTC_ERROR_OUT_OF_MEMORY */ ? TACK_ERR_NOMEM : TACK_ERR_DEVICE,
                    "kernel '%s': nvrtcCreateProgram failed: %s", kernel_name,
                    nv->GetErrorString(r));
    tack_status st = TACK_OK;
    r = nv->CompileProgram(p, argc, argv);
    if (r == NVRTC_ERROR_COMPILATION) {
        /* Our emitter wrote code NVRTC refused: give its log whole (as much
         * as the message holds), for the bug report. */
        char *log = program_log(nv, p);
        st = backend_error(err, TACK_ERR_COMPILE, "kernel '%s': NVRTC rejected the generated code:\n%s",
                  kernel_name, log ? log : "(no log: out of memory)");
        free(log);
    } else if (r == 5 /* NVRTC_ERROR_INVALID_OPTION: an architecture it lacks */) {
        char *log = program_log(nv, p);
        st = backend_error(err, TACK_ERR_VALUE,
                  "kernel '%s': NVRTC %s cannot compile for %s: %s%s%s", kernel_name,
                  cuda_nvrtc_version(), arch, nv->GetErrorString(r), log && *log ? ": " : "",
                  log ? log : "");
        free(log);
    } else if (r != NVRTC_SUCCESS) {
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': nvrtcCompileProgram failed: %s",
                  kernel_name, nv->GetErrorString(r));
    }
    size_t n = 0;
    if (!st && (r = nv->GetPTXSize(p, &n)) != NVRTC_SUCCESS)
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': nvrtcGetPTXSize failed: %s", kernel_name,
                  nv->GetErrorString(r));
    char *out = NULL;
    if (!st && !(out = malloc(n + 1)))
        st = backend_error(err, TACK_ERR_NOMEM, "kernel '%s': out of memory compiling CUDA code",
                  kernel_name);
    if (!st && (r = nv->GetPTX(p, out)) != NVRTC_SUCCESS)
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': nvrtcGetPTX failed: %s", kernel_name,
                  nv->GetErrorString(r));
    nv->DestroyProgram(&p);
    if (st) {
        free(out);
        return st;
    }
    out[n] = 0; /* the size counts NVRTC's own NUL; this one is for n == 0 */
    *ptx = out;
    return TACK_OK;
}

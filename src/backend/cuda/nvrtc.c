/* nvrtc.c - CUDA C to PTX with NVRTC (gpu/rtc.c's flow; here where the
 * library is and what its failures say).  Needs the toolkit's library only,
 * no driver and no GPU: this is what tack.cuda.compile runs offline and
 * what a CUDA device's build runs before the driver loads the PTX. */
#define _DEFAULT_SOURCE /* dirent's d_name listing */
#include "cuda.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/rtc.h"


int cuda_arch_valid(const char *arch) {
    if (!arch || strncmp(arch, "sm_", 3)) return 0;
    const char *p = arch + 3;
    int digits = 0;
    while (isdigit((unsigned char)p[digits])) digits++;
    if (digits < 2 || digits > 3) return 0;
    p += digits;
    return !*p || ((*p == 'a' || *p == 'f') && !p[1]);
}

/* ---- NVRTC ------------------------------------------------------------ */

static gpu_rtc nvrtc;

static void *try_open(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) snprintf(nvrtc.where, sizeof nvrtc.where, "%s", path);
    return lib;
}

/* libnvrtc.so in dir, else its highest versioned libnvrtc.so.N (a pip
 * wheel ships only the versioned name). */
static void *open_in(const char *dir) {
    if (!dir || !*dir) return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/libnvrtc.so", dir);
    void *lib = try_open(path);
    if (lib) return lib;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char best[256] = "";
    long best_major = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strncmp(n, "libnvrtc.so.", 12)) continue; /* not -builtins, not .alt */
        char *end;
        long major = strtol(n + 12, &end, 10);
        if (end == n + 12 || major <= best_major) continue;
        best_major = major;
        snprintf(best, sizeof best, "%s", n);
    }
    closedir(d);
    if (best_major < 0) return NULL;
    snprintf(path, sizeof path, "%s/%s", dir, best);
    return try_open(path);
}

static void *open_under(const char *root) {
    if (!root || !*root) return NULL;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/lib64", root);
    void *lib = open_in(dir);
    if (!lib) {
        snprintf(dir, sizeof dir, "%s/lib", root);
        lib = open_in(dir);
    }
    return lib;
}

static void *open_nvrtc(gpu_rtc *r) {
    (void)r; /* nvrtc itself */
    /* An explicit file first (to pair NVRTC with an older driver), then the
     * toolkit the environment names, the default toolkit, the loader path. */
    void *lib = NULL;
    const char *explicit = getenv("TACK_NVRTC");
    if (explicit && *explicit) {
        lib = try_open(explicit);
        if (!lib) {
            snprintf(nvrtc.error, sizeof nvrtc.error,
                     "NVRTC could not be loaded from TACK_NVRTC=%s", explicit);
            return NULL;
        }
    }
    if (!lib) lib = open_under(getenv("CUDA_PATH"));
    if (!lib) lib = open_under(getenv("CUDA_HOME"));
    if (!lib) lib = open_in("/usr/local/cuda/lib64");
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                        "libnvrtc.so.11.2"};
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) lib = try_open(names[i]);
    if (!lib) {
        snprintf(nvrtc.error, sizeof nvrtc.error,
                 "NVRTC (libnvrtc.so) was not found in $CUDA_PATH/lib64, $CUDA_HOME/lib64, "
                 "/usr/local/cuda/lib64 or the loader path (install the CUDA toolkit's NVRTC, "
                 "e.g. pip install nvidia-cuda-nvrtc-cu12, and set TACK_NVRTC to the library)");
        return NULL;
    }
    return lib;
}

static void load_nvrtc(void) { gpu_rtc_fill(&nvrtc); }

/* What NVRTC's failures say that hipRTC's do not. */
static tack_status compile_failed(gpu_rtc *r, gpu_rtc_prog p, const char *kernel,
                                  const char *arch, int code, tack_error *err) {
    if (code != GPU_RTC_ERROR_INVALID_OPTION) /* else: an architecture it lacks */
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s': nvrtcCompileProgram failed: %s",
                             kernel, r->api.GetErrorString(code));
    char *log = gpu_rtc_log(r, p);
    tack_status st = backend_error(err, TACK_ERR_VALUE,
                                   "kernel '%s': NVRTC %s cannot compile for %s: %s%s%s", kernel,
                                   r->version, arch, r->api.GetErrorString(code),
                                   log && *log ? ": " : "", log ? log : "");
    free(log);
    return st;
}

static gpu_rtc nvrtc = {.name = "NVRTC", .language = "CUDA", .ext = ".cu", .prefix = "nvrtc",
                        .code = "PTX", .open = open_nvrtc, .load = load_nvrtc,
                        .compile_failed = compile_failed, .once = PTHREAD_ONCE_INIT};

const gpu_rtc_api *cuda_nvrtc_load(const char **why) { return gpu_rtc_load(&nvrtc, why); }
const char *cuda_nvrtc_path(void) { return gpu_rtc_path(&nvrtc); }
const char *cuda_nvrtc_version(void) { return gpu_rtc_version(&nvrtc); }

tack_status cuda_compile_ptx(const char *kernel_name, const char *source, const char *arch,
                             char **ptx, tack_error *err) {
    *ptx = NULL;
    if (!cuda_arch_valid(arch))
        return backend_error(err, TACK_ERR_VALUE,
                    "kernel '%s': '%s' is not a CUDA architecture (expected e.g. \"sm_80\", "
                    "\"sm_90\" or \"sm_90a\")",
                    kernel_name, arch ? arch : "(null)");
    /* A virtual architecture: NVRTC writes PTX for it, which the driver
     * (or ptxas) turns into the device's code. */
    char arch_opt[48];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=compute_%s", arch + 3);
    size_t n;
    return gpu_rtc_compile(&nvrtc, kernel_name, source, gpu_dialect_cuda.build_options, arch_opt,
                           arch, ptx, &n, err);
}

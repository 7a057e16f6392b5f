/* ocloc.c - OpenCL C to SPIR-V and to a native binary with Intel's ocloc,
 * run as a child process in a private temporary directory (ocloc writes
 * its outputs as files).  Needs Intel's compiler only, no GPU: this is
 * what tack.level_zero.spirv / compile run offline and what a Level Zero
 * device's build runs before the driver loads the code.  A child process
 * and not libocloc in this one: see level_zero.h. */
#define _GNU_SOURCE
#include "level_zero.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"

int l0_is_spirv(const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    return p && n >= 20 && n % 4 == 0 && p[0] == 0x03 && p[1] == 0x02 && p[2] == 0x23 &&
           p[3] == 0x07;
}

int l0_is_native(const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    return p && n >= 64 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2;
}

int l0_target_valid(const char *t) {
    if (!t || !*t || strlen(t) > 32) return 0;
    if (t[0] == '0' && t[1] == 'x') {
        if (!t[2]) return 0;
        for (const char *p = t + 2; *p; p++)
            if (!isxdigit((unsigned char)*p)) return 0;
        return 1;
    }
    if (!isalpha((unsigned char)t[0])) return 0;
    for (const char *p = t; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.') return 0;
    return 1;
}

/* ---- finding the tool --------------------------------------------------- */

static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static char tool[4096];
static char find_error[512];

static void find_tool(void) {
    const char *set = getenv("TACK_OCLOC");
    if (set && *set) {
        if (access(set, X_OK) == 0) snprintf(tool, sizeof tool, "%s", set);
        else snprintf(find_error, sizeof find_error, "TACK_OCLOC=%.256s is not an executable", set);
        return;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path && !*tool) {
        size_t n = strcspn(path, ":");
        char cand[4096];
        if (n && n < sizeof cand - 7) {
            snprintf(cand, sizeof cand, "%.*s/ocloc", (int)n, path);
            if (access(cand, X_OK) == 0) snprintf(tool, sizeof tool, "%s", cand);
        }
        path += n + (path[n] == ':');
    }
    if (!*tool)
        snprintf(find_error, sizeof find_error,
                 "Intel's ocloc was not found on PATH (install it, e.g. Debian's "
                 "intel-opencl-icd, or set TACK_OCLOC to the tool)");
}

const char *l0_ocloc_path(const char **why) {
    pthread_once(&find_once, find_tool);
    if (why) *why = *tool ? NULL : find_error;
    return *tool ? tool : NULL;
}

/* ---- running it ----------------------------------------------------------- */

/* A private directory for one run; 0 on failure. */
static int make_dir(char *dir, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(dir, cap, "%s/tack-ocloc-XXXXXX", tmp);
    return mkdtemp(dir) != NULL;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The whole of a file (malloc'd, NUL after its bytes); NULL if absent. */
static void *read_all(const char *path, size_t *len) {
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 65536;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(fp);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, 4096, fp);
        n += got;
        if (got < 4096) break;
    }
    fclose(fp);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Runs the tool with argv (argv[0] unused) in dir, its output to dir/log;
 * the exit status, or -1 when it could not be started or was killed. */
extern char **environ;

static int run(const char *dir, char *const argv[]) {
    char log[4400];
    snprintf(log, sizeof log, "%s/log", dir);
    /* The tool gets our environment without LD_PRELOAD: a sanitizer
     * runtime preloaded into this process is not the tool's business, and
     * Intel's compiler library, dlopened with RTLD_DEEPBIND, cannot run
     * under it.  Built before fork: only async-signal-safe calls after. */
    size_t n = 0;
    while (environ[n]) n++;
    char **env = malloc((n + 1) * sizeof *env);
    if (!env) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
    env[k] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        free(env);
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || chdir(dir) != 0) _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        execve(tool, argv, env);
        _exit(127);
    }
    free(env);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char version[64] = "none";

static void read_version(void) {
    char dir[4096];
    if (!l0_ocloc_path(NULL) || !make_dir(dir, sizeof dir)) return;
    char *argv[] = {"ocloc", "query", "OCL_DRIVER_VERSION", NULL};
    if (run(dir, argv) == 0) {
        char p[4400];
        snprintf(p, sizeof p, "%s/OCL_DRIVER_VERSION", dir);
        size_t n;
        char *text = read_all(p, &n);
        if (text) {
            while (n && isspace((unsigned char)text[n - 1])) text[--n] = 0;
            if (n && n < sizeof version) memcpy(version, text, n + 1);
            free(text);
        }
    }
    remove_dir(dir);
}

const char *l0_ocloc_version(void) {
    pthread_once(&version_once, read_version);
    return version;
}

/* ocloc's log without its trailing "Command was: ..." echo. */
static void trim_log(char *log) {
    char *cmd = strstr(log, "Command was:");
    if (cmd) *cmd = 0;
    size_t n = strlen(log);
    while (n && isspace((unsigned char)log[n - 1])) log[--n] = 0;
}

tack_status l0_ocloc_compile(const ir_func *f, const char *source, const char *device,
                             int want_native, void **native, size_t *native_len, void **spirv,
                             size_t *spirv_len, tack_error *err) {
    *native = *spirv = NULL;
    *native_len = *spirv_len = 0;
    const char *name = f->name;
    if (!l0_target_valid(device))
        return backend_error(err, TACK_ERR_VALUE,
                             "kernel '%s': '%s' is not an Intel GPU target name (expected e.g. "
                             "\"dg2\", \"tgllp\", \"pvc\" or a PCI device id such as \"0x56a0\")",
                             name, device ? device : "(null)");
    const char *why;
    if (!l0_ocloc_path(&why))
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s': cannot compile for Level Zero: %s",
                             name, why);
    char dir[4096];
    if (!make_dir(dir, sizeof dir))
        return backend_error(err, TACK_ERR_DEVICE,
                             "kernel '%s': cannot make a temporary directory for ocloc: %s", name,
                             strerror(errno));
    char src[4400], out_native[4400], out_spirv[4400], logp[4400];
    snprintf(src, sizeof src, "%s/k.cl", dir);
    snprintf(out_native, sizeof out_native, "%s/k", dir);
    snprintf(out_spirv, sizeof out_spirv, "%s/k.spv", dir);
    snprintf(logp, sizeof logp, "%s/log", dir);
    tack_status st = TACK_OK;
    FILE *fp = fopen(src, "wb");
    if (!fp || fputs(source, fp) < 0) st = TACK_ERR_DEVICE;
    if (fp && fclose(fp) != 0) st = TACK_ERR_DEVICE;
    if (st) {
        remove_dir(dir);
        return backend_error(err, st, "kernel '%s': cannot write ocloc's input in %s", name, dir);
    }
    /* SPIR-V alone is for any device: fp64 is enabled for the front end,
     * whatever the named target has (IGC finalizes it on the device). */
    char *argv[24];
    int argc = 0;
    argv[argc++] = "ocloc";
    argv[argc++] = "compile";
    argv[argc++] = "-file";
    argv[argc++] = src;
    argv[argc++] = "-device";
    argv[argc++] = (char *)device;
    argv[argc++] = "-options";
    argv[argc++] = (char *)gpu_dialect_opencl.build_options;
    if (!want_native) {
        argv[argc++] = "-internal_options";
        argv[argc++] = "-cl-ext=+cl_khr_fp64";
        argv[argc++] = "-spv_only";
    }
    argv[argc++] = "-output";
    argv[argc++] = "k";
    argv[argc++] = "-output_no_suffix";
    argv[argc++] = "-out_dir";
    argv[argc++] = dir;
    argv[argc] = NULL;
    int rc = run(dir, argv);
    size_t log_len = 0, n = 0, sn = 0;
    char *log = read_all(logp, &log_len);
    if (log) trim_log(log);
    void *bin = NULL, *spv = NULL;
    if (rc == 0) {
        spv = read_all(out_spirv, &sn);
        if (want_native) bin = read_all(out_native, &n);
    }
    remove_dir(dir);
    const char *text = log ? log : "";
    if (rc < 0) {
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': ocloc (%s) could not be run", name,
                           tool);
    } else if (rc != 0 && (strstr(text, "Cannot get HW Info") ||
                           strstr(text, "Could not determine device target") ||
                           strstr(text, "Unknown device"))) {
        st = backend_error(err, TACK_ERR_VALUE,
                           "kernel '%s': ocloc %s does not know the Intel GPU '%s' (`ocloc compile "
                           "--help` lists the targets it knows)",
                           name, l0_ocloc_version(), device);
    } else if (rc != 0 && (strstr(text, "cl_khr_fp64") || strstr(text, "Double type"))) {
        /* The target has no f64: said at the kernel's first use of it. */
        char who[96];
        snprintf(who, sizeof who, "Intel GPU '%s'", device);
        st = gpu_check_support(f, 0, 1, who, "", err);
        if (!st)
            st = backend_error(err, TACK_ERR_TYPE, "kernel '%s': %s has no fp64 support:\n%s", name,
                               who, text);
    } else if (rc != 0) {
        /* Our emitter wrote code IGC refused: its log whole, for the bug
         * report. */
        st = backend_error(err, TACK_ERR_COMPILE,
                           "kernel '%s': ocloc rejected the generated code for %s (exit %d):\n%s",
                           name, device, rc, text);
    } else if (!l0_is_spirv(spv, sn) || (want_native && !l0_is_native(bin, n))) {
        st = backend_error(err, TACK_ERR_DEVICE,
                           "kernel '%s': ocloc %s made no %s for %s", name, l0_ocloc_version(),
                           l0_is_spirv(spv, sn) ? "native binary (an ELF)" : "SPIR-V", device);
    }
    free(log);
    if (st) {
        free(bin);
        free(spv);
        return st;
    }
    *native = bin;
    *native_len = n;
    *spirv = spv;
    *spirv_len = sn;
    return TACK_OK;
}

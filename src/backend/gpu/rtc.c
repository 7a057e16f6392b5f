/* rtc.c - NVRTC's and hipRTC's shared flow (rtc.h): they differ in where
 * the library is, the calls' prefix, and a few words of their failures. */
#include "backend/gpu/rtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/driver.h"

void gpu_rtc_fill(gpu_rtc *r) {
    snprintf(r->version, sizeof r->version, "none");
    void *lib = r->open(r);
    if (!lib) return;
    const char *suffix[9] = {"GetErrorString", "Version", "CreateProgram", "DestroyProgram",
                             "CompileProgram", NULL, NULL, "GetProgramLogSize", "GetProgramLog"};
    char size_name[32], code_name[32];
    snprintf(size_name, sizeof size_name, "Get%sSize", r->code);
    snprintf(code_name, sizeof code_name, "Get%s", r->code);
    suffix[5] = size_name;
    suffix[6] = code_name;
    /* The table is nine function pointers in suffix's order. */
    void *slots[9];
    for (int i = 0; i < 9; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", r->prefix, suffix[i]);
        if (!(slots[i] = dlsym(lib, name))) {
            snprintf(r->error, sizeof r->error, "%s at %s has no %s", r->name, r->where, name);
            r->where[0] = 0;
            return;
        }
    }
    memcpy(&r->api, slots, sizeof slots);
    r->loaded = &r->api;
    int major = 0, minor = 0;
    if (r->api.Version(&major, &minor) == 0)
        snprintf(r->version, sizeof r->version, "%d.%d", major, minor);
}

const gpu_rtc_api *gpu_rtc_load(gpu_rtc *r, const char **why) {
    return gpu_table_load(NULL, &r->once, r->load, &r->loaded, r->error, why);
}

const char *gpu_rtc_version(gpu_rtc *r) {
    gpu_rtc_load(r, NULL);
    return r->version;
}

const char *gpu_rtc_path(gpu_rtc *r) {
    gpu_rtc_load(r, NULL);
    return r->loaded ? r->where : "";
}

char *gpu_rtc_log(const gpu_rtc *r, gpu_rtc_prog p) {
    size_t n = 0;
    if (r->api.GetProgramLogSize(p, &n) != 0) n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (!n || r->api.GetProgramLog(p, log) != 0) n = 0;
    log[n] = 0;
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == 0)) log[--n] = 0;
    return log;
}

/* "kernel 'k': <prefix><call> failed: <words>" */
static tack_status call_failed(const gpu_rtc *r, tack_status st, const char *kernel,
                               const char *call, int code, tack_error *err) {
    return backend_error(err, st, "kernel '%s': %s%s failed: %s", kernel, r->prefix, call,
                         r->api.GetErrorString(code));
}

tack_status gpu_rtc_compile(gpu_rtc *r, const char *kernel, const char *source,
                            const char *options, const char *arch_option, const char *arch,
                            char **code, size_t *len, tack_error *err) {
    *code = NULL;
    *len = 0;
    const char *why;
    const gpu_rtc_api *api = gpu_rtc_load(r, &why);
    if (!api)
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s': cannot compile %s code: %s",
                             kernel, r->language, why);
    char opts[256];
    snprintf(opts, sizeof opts, "%s", options);
    const char *argv[17];
    int argc = 0;
    for (char *tok = strtok(opts, " "); tok && argc < 15; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc++] = arch_option;

    char name[160];
    snprintf(name, sizeof name, "%s%s", kernel, r->ext);
    gpu_rtc_prog p = NULL;
    int rc = api->CreateProgram(&p, source, name, 0, NULL, NULL);
    if (rc)
        return call_failed(r, rc == GPU_RTC_ERROR_OUT_OF_MEMORY ? TACK_ERR_NOMEM : TACK_ERR_DEVICE,
                           kernel, "CreateProgram", rc, err);
    tack_status st = TACK_OK;
    rc = api->CompileProgram(p, argc, argv);
    if (rc == GPU_RTC_ERROR_COMPILATION) {
        /* Our emitter wrote code the compiler refused: its log whole (as
         * much as the message holds), for the bug report. */
        char *log = gpu_rtc_log(r, p);
        st = backend_error(err, TACK_ERR_COMPILE,
                           "kernel '%s': %s rejected the generated code:\n%s", kernel, r->name,
                           log ? log : "(no log: out of memory)");
        free(log);
    } else if (rc) {
        st = r->compile_failed(r, p, kernel, arch, rc, err);
    }
    char call[32];
    size_t n = 0;
    snprintf(call, sizeof call, "Get%sSize", r->code);
    if (!st && (rc = api->GetCodeSize(p, &n)))
        st = call_failed(r, TACK_ERR_DEVICE, kernel, call, rc, err);
    char *out = NULL;
    if (!st && !(out = malloc(n + 1))) /* NUL after the bytes: see backend_generate */
        st = backend_error(err, TACK_ERR_NOMEM, "kernel '%s': out of memory compiling %s code",
                           kernel, r->language);
    snprintf(call, sizeof call, "Get%s", r->code);
    if (!st && (rc = api->GetCode(p, out)))
        st = call_failed(r, TACK_ERR_DEVICE, kernel, call, rc, err);
    if (!st && r->check) st = r->check(kernel, arch, out, n, err);
    api->DestroyProgram(&p);
    if (st) {
        free(out);
        return st;
    }
    out[n] = 0; /* the size may count the compiler's own NUL; this one is for n == 0 */
    *code = out;
    *len = n;
    return TACK_OK;
}

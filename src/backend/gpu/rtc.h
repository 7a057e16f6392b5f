/*
 * rtc.h - the runtime compilers (NVRTC for CUDA, hipRTC for HIP), one
 * flow (rtc.c): the library found at run time and its table filled once
 * per process, its version, a program's log, and source -> create ->
 * compile -> the code.  The two libraries have the same nine calls under
 * their own prefix; a vendor gives a gpu_rtc naming them, how to find its
 * library, and the words of the failures that differ.
 */
#ifndef TACK_GPU_RTC_H
#define TACK_GPU_RTC_H

#include <pthread.h>
#include <stddef.h>

#include "backend/backend.h"

typedef struct gpu_rtc_prog_st *gpu_rtc_prog;

/* nvrtc.h's and hiprtc.h's calls (0 is success in both). */
typedef struct gpu_rtc_api {
    const char *(*GetErrorString)(int result);
    int (*Version)(int *major, int *minor);
    int (*CreateProgram)(gpu_rtc_prog *prog, const char *src, const char *name, int numHeaders,
                         const char *const *headers, const char *const *includeNames);
    int (*DestroyProgram)(gpu_rtc_prog *prog);
    int (*CompileProgram)(gpu_rtc_prog prog, int numOptions, const char *const *options);
    int (*GetCodeSize)(gpu_rtc_prog prog, size_t *size); /* nvrtcGetPTXSize */
    int (*GetCode)(gpu_rtc_prog prog, char *code);       /* nvrtcGetPTX */
    int (*GetProgramLogSize)(gpu_rtc_prog prog, size_t *size);
    int (*GetProgramLog)(gpu_rtc_prog prog, char *log);
} gpu_rtc_api;

/* The result codes both libraries share. */
#define GPU_RTC_ERROR_OUT_OF_MEMORY 1
#define GPU_RTC_ERROR_INVALID_OPTION 5
#define GPU_RTC_ERROR_COMPILATION 6

typedef struct gpu_rtc gpu_rtc;
struct gpu_rtc {
    /* The vendor's part. */
    const char *name;     /* "NVRTC": in errors */
    const char *language; /* "CUDA": "cannot compile CUDA code" */
    const char *ext;      /* ".cu": the program's file name */
    const char *prefix;   /* "nvrtc": the symbols' prefix */
    const char *code;     /* "PTX": the code calls' names are Get<code>Size, Get<code> */
    /* The library, r->where its path; NULL with r->error saying why. */
    void *(*open)(gpu_rtc *r);
    /* pthread_once's function: gpu_rtc_fill(this) */
    void (*load)(void);
    /* A compile that failed other than by a refused program (code). */
    tack_status (*compile_failed)(gpu_rtc *r, gpu_rtc_prog p, const char *kernel,
                                  const char *arch, int code, tack_error *err);
    /* The code made checked (may be NULL). */
    tack_status (*check)(const char *kernel, const char *arch, const char *code, size_t n,
                         tack_error *err);
    /* Filled once. */
    pthread_once_t once;
    gpu_rtc_api api;
    const void *loaded;
    char error[1280];
    char where[1024];
    char version[32]; /* "13.0", or "none" */
};

/* Fills r (r->load's body): the library, its calls, its version. */
void gpu_rtc_fill(gpu_rtc *r);
/* The table, or NULL with *why saying what to install. */
const gpu_rtc_api *gpu_rtc_load(gpu_rtc *r, const char **why);
const char *gpu_rtc_version(gpu_rtc *r);
const char *gpu_rtc_path(gpu_rtc *r); /* "" when not loaded */
/* p's log, malloc'd, without its trailing blanks; NULL: no memory. */
char *gpu_rtc_log(const gpu_rtc *r, gpu_rtc_prog p);

/* source -> code (malloc'd, NUL after its n bytes) with `options` (split
 * on spaces, at most 15) and arch_option after them.  A refused program
 * is TACK_ERR_COMPILE with the log; no library TACK_ERR_DEVICE. */
tack_status gpu_rtc_compile(gpu_rtc *r, const char *kernel, const char *source,
                            const char *options, const char *arch_option, const char *arch,
                            char **code, size_t *n, tack_error *err);

#endif

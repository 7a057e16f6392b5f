/* program.c - OpenCL C source, or a program binary from the disk cache, to
 * a built program and its kernel; a variant's code object; and the
 * artifact the disk cache stores for it.
 *
 * The artifact holds the binary (what the driver made for this device:
 * loading it skips the OpenCL compiler) and the source, because a driver
 * may refuse a binary an older version of itself wrote, and then the
 * source still loads without running Tack's code generation again. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"


/* "TOCL" and the layout's version: bump on any change to the record. */
#define ARTIFACT_MAGIC 0x4c434f54u
#define ARTIFACT_VERSION 1u

static tack_status nomem(tack_error *err, const char *kernel_name) {
    err->status = TACK_ERR_NOMEM;
    err->filename[0] = 0;
    err->lineno = err->col = 0;
    snprintf(err->message, sizeof err->message, "kernel '%s': out of memory building OpenCL code",
             kernel_name);
    return TACK_ERR_NOMEM;
}

static tack_status kernel_fail(tack_error *err, const char *kernel_name, const char *call,
                               cl_int code) {
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", kernel_name);
    return opencl_fail(err, what, call, code);
}

/* The compiler's log for the device, malloc'd ("" when it has none). */
static char *build_log(backend *b, cl_program p) {
    size_t n = 0;
    if (b->cl->GetProgramBuildInfo(p, b->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS)
        n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (!n || b->cl->GetProgramBuildInfo(p, b->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) !=
                  CL_SUCCESS)
        n = 0;
    log[n] = 0;
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == 0)) log[--n] = 0;
    return log;
}

/* OpenCL C -> a built program; the compiler's refusal names kernel_name. */
static tack_status build_program(backend *b, const char *kernel_name, const char *source,
                                 cl_program *program, tack_error *err) {
    const opencl_api *cl = b->cl;
    *program = NULL;
    cl_int e = CL_SUCCESS;
    cl_program p = NULL;
    /* A failure with an empty build log is the driver's, not a diagnosis
     * of the code: PoCL gives one now and then when processes build the
     * same program into its kernel cache at once.  One more try. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (p) cl->ReleaseProgram(p);
        p = cl->CreateProgramWithSource(b->context, 1, &source, NULL, &e);
        if (!p || e != CL_SUCCESS)
            return kernel_fail(err, kernel_name, "clCreateProgramWithSource",
                               e ? e : CL_INVALID_VALUE);
        e = cl->BuildProgram(p, 1, &b->device, b->options, NULL, NULL);
        if (e != CL_BUILD_PROGRAM_FAILURE) break;
        char *log = build_log(b, p);
        int silent = log && !log[0];
        free(log);
        if (!silent) break;
    }
    if (e != CL_SUCCESS) {
        tack_status st;
        if (e == CL_BUILD_PROGRAM_FAILURE) {
            /* Our emitter wrote code the compiler refused: give its log whole
             * (as much as the message holds), for the bug report. */
            char *log = build_log(b, p);
            err->status = st = TACK_ERR_COMPILE;
            err->filename[0] = 0;
            err->lineno = err->col = 0;
            snprintf(err->message, sizeof err->message,
                     "kernel '%s': the OpenCL compiler rejected the generated code:\n%s",
                     kernel_name, log ? log : "(no build log: out of memory)");
            free(log);
        } else {
            st = kernel_fail(err, kernel_name, "clBuildProgram", e);
        }
        cl->ReleaseProgram(p);
        return st;
    }
    atomic_fetch_add(&backend_stats.program_builds, 1);
    *program = p;
    return TACK_OK;
}

static tack_status create_kernel(backend *b, const char *kernel_name, cl_program p,
                                 const char *entry, cl_kernel *kernel, tack_error *err) {
    cl_int e = CL_SUCCESS;
    cl_kernel k = b->cl->CreateKernel(p, entry, &e);
    if (!k || e != CL_SUCCESS) {
        char call[192];
        snprintf(call, sizeof call, "clCreateKernel(\"%s\")", entry);
        return kernel_fail(err, kernel_name, call, e ? e : CL_INVALID_KERNEL_NAME);
    }
    *kernel = k;
    return TACK_OK;
}

tack_status opencl_build_source(backend *b, const char *kernel_name, const char *source,
                                const char *entry, cl_program *program, cl_kernel *kernel,
                                tack_error *err) {
    *kernel = NULL;
    tack_status st = build_program(b, kernel_name, source, program, err);
    if (st) return st;
    st = create_kernel(b, kernel_name, *program, entry, kernel, err);
    if (st) {
        b->cl->ReleaseProgram(*program);
        *program = NULL;
    }
    return st;
}

/* A stored binary -> program and kernel; 0, or -1 when the driver refuses it
 * (another driver version, a damaged entry): the caller builds from source. */
static int build_binary(backend *b, const unsigned char *bin, size_t n, const char *entry,
                        cl_program *program, cl_kernel *kernel) {
    const opencl_api *cl = b->cl;
    cl_int e = CL_SUCCESS, status = CL_SUCCESS;
    cl_program p = cl->CreateProgramWithBinary(b->context, 1, &b->device, &n, &bin, &status, &e);
    if (!p) return -1;
    if (e != CL_SUCCESS || status != CL_SUCCESS ||
        cl->BuildProgram(p, 1, &b->device, b->options, NULL, NULL) != CL_SUCCESS) {
        cl->ReleaseProgram(p);
        return -1;
    }
    cl_kernel k = cl->CreateKernel(p, entry, &e);
    if (!k || e != CL_SUCCESS) {
        cl->ReleaseProgram(p);
        return -1;
    }
    *program = p;
    *kernel = k;
    return 0;
}

/* ---- shared programs ---------------------------------------------- */

/* Takes over one reference to p; NULL when out of memory (p released). */
static opencl_program *program_new(const opencl_api *cl, cl_program p) {
    opencl_program *prog = calloc(1, sizeof *prog);
    if (!prog) {
        cl->ReleaseProgram(p);
        return NULL;
    }
    prog->cl = cl;
    prog->program = p;
    atomic_init(&prog->refs, 1);
    pthread_mutex_init(&prog->lock, NULL);
    return prog;
}

static opencl_program *program_ref(opencl_program *prog) {
    atomic_fetch_add(&prog->refs, 1);
    return prog;
}

static void program_unref(opencl_program *prog) {
    if (!prog || atomic_fetch_sub(&prog->refs, 1) != 1) return;
    prog->cl->ReleaseProgram(prog->program);
    pthread_mutex_destroy(&prog->lock);
    free(prog->binary);
    free(prog);
}

/* ---- code objects ------------------------------------------------------ */

/* A code object without a program yet: the IR clone and the launch facts. */
static backend_code *code_new(const ir_func *f, const char *entry, size_t entry_len,
                              const char *source, size_t source_len) {
    backend_code *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->f = gpu_keep_ir(f);
    c->entry = malloc(entry_len + 1);
    c->source = malloc(source_len + 1);
    c->arrays = malloc((f->nparams ? f->nparams : 1) * sizeof *c->arrays);
    if (!c->f || !c->entry || !c->source || !c->arrays) goto fail;
    memcpy(c->entry, entry, entry_len);
    c->entry[entry_len] = 0;
    memcpy(c->source, source, source_len);
    c->source[source_len] = 0;
    c->pack_words = gpu_pack_words(f);
    for (int p = 0; p < f->nparams; p++)
        if (f->params[p].role == ROLE_ARRAY) c->arrays[c->narrays++] = p;
    if (gpu_print_table_init(&c->prints, c->f) < 0) goto fail;
    return c;
fail: /* out of memory: what was had goes */
    ir_func_free(c->f);
    free(c->entry);
    free(c->source);
    free(c->arrays);
    free(c);
    return NULL;
}

/* Gives c its built program p and kernel k (both taken over). */
static tack_status code_adopt(backend *b, backend_code *c, cl_program p, cl_kernel k,
                              tack_error *err) {
    c->kernel = k;
    c->prog = program_new(b->cl, p);
    return c->prog ? TACK_OK : nomem(err, c->f->name);
}

tack_status opencl_code_from_source(backend *b, const ir_func *f, const char *source,
                                    const char *entry, backend_code **out, tack_error *err) {
    *out = NULL;
    backend_code *c = code_new(f, entry, strlen(entry), source, strlen(source));
    if (!c) return nomem(err, f->name);
    cl_program p;
    cl_kernel k;
    tack_status st = opencl_build_source(b, f->name, c->source, c->entry, &p, &k, err);
    if (!st) st = code_adopt(b, c, p, k, err);
    if (st) {
        opencl_release(b, c);
        return st;
    }
    *out = c;
    return TACK_OK;
}

int opencl_code_many(backend *b, int n, const ir_func *const *fs, const char *const *sources,
                     const char *const *entries, backend_code **outs, tack_error *errs) {
    for (int i = 0; i < n; i++) outs[i] = NULL;
    /* One source: the kernels' texts one after another (each guarded its
     * helpers, and entries are distinct). */
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(sources[i]) + 1;
    char *all = n > 1 ? malloc(total) : NULL;
    cl_program p = NULL;
    tack_error whole;
    if (all) {
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            size_t len = strlen(sources[i]);
            memcpy(all + at, sources[i], len);
            all[at + len] = '\n';
            at += len + 1;
        }
        all[at] = 0;
        if (build_program(b, fs[0]->name, all, &p, &whole) != TACK_OK) p = NULL;
        free(all);
    }
    if (!p) {
        /* Refused as a whole (or one kernel): each alone, so a failure is
         * its own, reported as a single build reports it. */
        for (int i = 0; i < n; i++)
            opencl_code_from_source(b, fs[i], sources[i], entries[i], &outs[i], &errs[i]);
        return n;
    }
    opencl_program *prog = program_new(b->cl, p);
    for (int i = 0; i < n; i++) {
        backend_code *c = prog ? code_new(fs[i], entries[i], strlen(entries[i]), sources[i],
                                          strlen(sources[i]))
                               : NULL;
        if (!c) {
            nomem(&errs[i], fs[i]->name);
            continue;
        }
        if (create_kernel(b, fs[i]->name, prog->program, c->entry, &c->kernel, &errs[i])) {
            opencl_release(b, c);
            continue;
        }
        c->prog = program_ref(prog);
        outs[i] = c;
    }
    program_unref(prog); /* the code objects hold it now */
    return 1;
}

void opencl_release(backend *b, backend_code *c) {
    if (!c) return;
    if (c->kernel) b->cl->ReleaseKernel(c->kernel);
    if (c->print_buf) b->cl->ReleaseMemObject(c->print_buf);
    gpu_print_table_free(&c->prints);
    program_unref(c->prog);
    ir_func_free(c->f);
    free(c->entry);
    free(c->source);
    free(c->arrays);
    free(c);
}

/* ---- the artifact ------------------------------------------------------ */

/* The program's binary for its one device, malloc'd; NULL when the driver
 * gives none (the artifact then holds only the source). */
static unsigned char *program_binary(const opencl_api *cl, cl_program p, size_t *n) {
    size_t size = 0;
    *n = 0;
    if (cl->GetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        !size)
        return NULL;
    unsigned char *bin = malloc(size);
    unsigned char *ptrs[1] = {bin};
    if (!bin || cl->GetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL) != CL_SUCCESS) {
        free(bin);
        return NULL;
    }
    *n = size;
    return bin;
}

/* The entry's record: its kernel's name, the program's binary (fetched
 * once per program, kept while snapshots wait for it) and the kernel's own
 * source. */
static int artifact_of(opencl_program *prog, const char *entry, const char *source,
                       ser_writer *w) {
    ser_put_u32(w, ARTIFACT_MAGIC);
    ser_put_u32(w, ARTIFACT_VERSION);
    ser_put_str(w, entry);
    pthread_mutex_lock(&prog->lock);
    if (!prog->fetched) {
        prog->binary = program_binary(prog->cl, prog->program, &prog->binary_len);
        prog->fetched = 1;
    }
    ser_put_blob(w, prog->binary, prog->binary_len);
    if (!prog->snapshots) {
        free(prog->binary);
        prog->binary = NULL;
        prog->binary_len = 0;
        prog->fetched = 0;
    }
    pthread_mutex_unlock(&prog->lock);
    ser_put_str(w, source);
    return w->failed ? -1 : 0;
}

int opencl_artifact(backend *b, const backend_code *c, ser_writer *w) {
    (void)b;
    return artifact_of(c->prog, c->entry, c->source, w);
}

/* A driver hands out a program's binary only after compiling it again
 * (PoCL: 40-90 ms a program), so the runtime makes the artifact on its
 * writer thread from this snapshot: the program (held: it, and the
 * context it holds, outlive the code object and the device), its entry's
 * name and source.  The snapshots of one program's kernels share one
 * fetch of its binary. */
typedef struct snapshot {
    opencl_program *prog;
    char *entry, *source;
} snapshot;

void *opencl_artifact_snapshot(backend *b, const backend_code *c) {
    (void)b;
    snapshot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->entry = strdup(c->entry);
    s->source = strdup(c->source);
    if (!s->entry || !s->source) {
        free(s->entry);
        free(s->source);
        free(s);
        return NULL;
    }
    s->prog = program_ref(c->prog);
    pthread_mutex_lock(&s->prog->lock);
    s->prog->snapshots++;
    pthread_mutex_unlock(&s->prog->lock);
    return s;
}

int opencl_artifact_write(void *snap, ser_writer *w) {
    snapshot *s = snap;
    return artifact_of(s->prog, s->entry, s->source, w);
}

void opencl_artifact_free(void *snap) {
    snapshot *s = snap;
    if (!s) return;
    opencl_program *prog = s->prog;
    pthread_mutex_lock(&prog->lock);
    if (--prog->snapshots == 0) {
        /* The last one: no entry waits for the binary any more. */
        free(prog->binary);
        prog->binary = NULL;
        prog->binary_len = 0;
        prog->fetched = 0;
    }
    pthread_mutex_unlock(&prog->lock);
    program_unref(prog);
    free(s->entry);
    free(s->source);
    free(s);
}

tack_status opencl_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                        backend_code **out, tack_error *err) {
    *out = NULL;
    ser_reader r = ser_reader_init(bytes, n);
    int null_entry = 0, null_source = 0;
    size_t entry_len = 0, source_len = 0, bin_len = 0;
    uint32_t magic = ser_get_u32(&r), version = ser_get_u32(&r);
    const char *entry = ser_get_str(&r, &entry_len, &null_entry);
    const unsigned char *bin = ser_get_blob(&r, &bin_len);
    const char *source = ser_get_str(&r, &source_len, &null_source);
    /* Strings go to the driver NUL-terminated: an embedded NUL is damage. */
    if (r.failed || magic != ARTIFACT_MAGIC || version != ARTIFACT_VERSION || null_entry ||
        null_source || !entry_len || memchr(entry, 0, entry_len) || memchr(source, 0, source_len) ||
        ser_left(&r)) {
        err->status = TACK_ERR_INTERNAL;
        err->filename[0] = 0;
        err->lineno = err->col = 0;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': the stored OpenCL code is damaged or from another version", f->name);
        return TACK_ERR_INTERNAL;
    }
    backend_code *c = code_new(f, entry, entry_len, source ? source : "", source_len);
    if (!c) return nomem(err, f->name);
    cl_program p;
    cl_kernel k;
    tack_status st;
    if (bin_len && build_binary(b, bin, bin_len, c->entry, &p, &k) == 0) {
        atomic_fetch_add(&backend_stats.binary_loads, 1);
        st = code_adopt(b, c, p, k, err);
    } else {
        st = opencl_build_source(b, f->name, c->source, c->entry, &p, &k, err);
        if (!st) atomic_fetch_add(&backend_stats.source_builds, 1);
        if (!st) st = code_adopt(b, c, p, k, err);
    }
    if (st) {
        opencl_release(b, c);
        return st;
    }
    *out = c;
    return TACK_OK;
}

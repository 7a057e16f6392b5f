/*
 * gpu.h - the GPU half of the pipeline, written once for every GPU
 * backend: the scalar pack (pack.c), the host-side evaluation of a
 * launch's range (range.c), and one C-family source emitter (emit.c) whose
 * differences between OpenCL C, CUDA C, HIP and MSL live in a dialect
 * table (dialects.c).
 *
 * The generated kernel takes the pack by value, then one pointer per array
 * parameter (ROLE_ARRAY, in parameter order; other parameters take no
 * argument), then one texture object per texture the dialect samples in
 * hardware (gpu_hardware_texture, in parameter order).  The pack is an
 * array of 64-bit words:
 *
 *   w[GPU_PACK_START], w[GPU_PACK_STEP]  the parallel loop's start and step
 *   w[GPU_PACK_COUNT]                    its trip count
 *   w[GPU_PACK_INNER0], w[GPU_PACK_INNER1]  ndindex's inner extents (1 if none)
 *   w[GPU_PACK_SCALARS + p]              scalar parameter p's bits, in the
 *                                        low bytes (as the runtime's slots)
 *
 * The innermost index takes the fastest-varying launch dimension 0: with
 * no inner extents, work item (g0) runs outer iteration k = g0 (i = start +
 * k * step); with one, item (g0, g1) runs outer iteration g1 and inner
 * index g0; with two, item (g0, g1, g2) runs outer iteration g2 and inner
 * indices g1, g0.  Each index is bounded by the pack's counts, so lengths
 * never recompile: a dialect whose driver covers the range runs one
 * iteration per item behind a bound check, the others stride over it in
 * grid-stride loops (dialect.h's covering_grid).
 */
#ifndef TACK_GPU_H
#define TACK_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "tack.h"

enum {
    GPU_PACK_START = 0,
    GPU_PACK_STEP,
    GPU_PACK_COUNT,
    GPU_PACK_INNER0,
    GPU_PACK_INNER1,
    GPU_PACK_SCALARS
};

/* Words in a pack at most: kernel parameters, template expansions and
 * debug mode's two hidden arrays are bounded by twice TACK_MAX_PARAMS. */
#define GPU_PACK_MAX_WORDS (GPU_PACK_SCALARS + 2 * TACK_MAX_PARAMS)

/* Words in f's pack. */
static inline int gpu_pack_words(const ir_func *f) { return GPU_PACK_SCALARS + f->nparams; }

typedef struct gpu_dialect gpu_dialect;
extern const gpu_dialect gpu_dialect_opencl;
extern const gpu_dialect gpu_dialect_cuda;
const gpu_dialect *gpu_dialect_hip(void); /* dialect_hip.c: CUDA's, with HIP's differences */
extern const gpu_dialect gpu_dialect_metal; /* dialect_metal.c */
/* Level Zero's: OpenCL C whose items stride over the range, as its driver
 * launches a grid sized to the device (level_zero/launch.c), not one that
 * covers the range. */
const gpu_dialect *gpu_dialect_level_zero(void);
/* OpenCL for a CPU device: the innermost ndindex index is a loop in each
 * work item (dialect.h's serial_innermost). */
const gpu_dialect *gpu_dialect_opencl_cpu(void);

/* emit.c: typed post-pass IR -> kernel source named `entry`, malloc'd.
 * Fails (naming the kernel and the line) on what the dialect cannot
 * express. */
tack_status gpu_emit(const ir_func *f, const gpu_dialect *d, const char *entry, char **source,
                     tack_error *err);
/* emit.c: the same kernel with each helper function inside #ifndef
 * TK_HAVE_<name>, so that several kernels' sources (distinct entries)
 * concatenate into one program that defines each helper once. */
tack_status gpu_emit_guarded(const ir_func *f, const gpu_dialect *d, const char *entry,
                             char **source, tack_error *err);

/* entry.c: a variant's kernel, as each driver builds and inspects it:
 * its range checked (gpu_range_check), its entry named "tack_" +
 * symbol_base, and its source emitted in dialect d (malloc'd). */
#define GPU_ENTRY_LEN 80
tack_status gpu_emit_variant(const ir_func *f, const gpu_dialect *d, const char *symbol_base,
                             char entry[GPU_ENTRY_LEN], char **source, tack_error *err);

/* emit.c: 1 when the kernel samples parameter p, a Texture3D, with the
 * dialect's hardware filtering (f32 texels, a dialect that has it); the
 * kernel then takes its texture object too.  Others are sampled in
 * software, from the array. */
int gpu_hardware_texture(const ir_func *f, int p, const gpu_dialect *d);

/* emit.c: 1 when the kernel's reductions combine per workgroup (a 1-D,
 * not collective, launch on a covering grid in a dialect with workgroup
 * memory: OpenCL): its launches must then use groups of exactly
 * IR_WORKGROUP items, at offsets that are multiples of it. */
int gpu_workgroup_reduction(const ir_func *f, const gpu_dialect *d);

/* support.c: TACK_ERR_TYPE naming the parameter, variable or line of the
 * first f64 (when !fp64) or 64-bit atomic (when !atomics64) in f: "...,
 * but <who> has no fp64 support" (<atomics64_word> for atomics). */
tack_status gpu_check_support(const ir_func *f, int fp64, int atomics64, const char *who,
                              const char *atomics64_word, tack_error *err);
/* support.c: TACK_ERR_VALUE when f's tack.local arrays together exceed
 * GPU_PRIVATE_BYTES, naming the largest array, its size and the limit. */
#define GPU_PRIVATE_BYTES (64 * 1024)
tack_status gpu_check_private(const ir_func *f, const char *who, tack_error *err);

/* How the host reads an array element the range uses (`range(n[0])`):
 * the backend's mem_read, which copies n bytes at `offset` of the buffer
 * whose handle a slot holds and returns when they have arrived. */
struct backend;
typedef struct gpu_device_read {
    tack_status (*read)(struct backend *b, const void *handle, size_t offset, void *dst, size_t n,
                        tack_error *err);
    struct backend *b;
} gpu_device_read;

/* range.c: evaluates the launch range on the host from the call's scalar
 * slots and dims: out = {start, stop, step, inner0, inner1}; array
 * elements through rd (NULL: refused), each index checked against its
 * array.  What needs the device's code (atomics, device functions, locals)
 * cannot be evaluated on the host: gpu_range_check tells at build time,
 * naming the kernel. */
tack_status gpu_range_check(const ir_func *f, tack_error *err);
tack_status gpu_range_eval(const ir_func *f, const uint64_t *slots,
                           const int64_t (*dims)[TACK_MAX_NDIM], const gpu_device_read *rd,
                           int64_t out[5], tack_error *err);

/* pack.c: fills a call's pack (gpu_pack_words(f) words); the range's trip
 * count is computed here.  Fails on a zero step, naming the kernel. */
tack_status gpu_pack_fill(const ir_func *f, const uint64_t *slots,
                          const int64_t (*dims)[TACK_MAX_NDIM], const gpu_device_read *rd,
                          int64_t *pack, tack_error *err);
/* The same from a range the runtime already evaluated (the warm path);
 * pack holds GPU_PACK_MAX_WORDS, and IR with more parameters is refused. */
tack_status gpu_pack_from_range(const ir_func *f, const int64_t range[5], const uint64_t *slots,
                                int64_t *pack, tack_error *err);

/* A copy of post-pass IR that owns every string: a GPU code object keeps
 * it for its launches, outliving the IR it was built or loaded from (which
 * ir_clone would share names with).  NULL: out of memory. */
ir_func *gpu_keep_ir(const ir_func *f);

/* print_buf.c: print() on GPU devices.  A kernel with print() takes one
 * more argument after its arrays and textures (a dialect's buffer index
 * follows the arrays'): a buffer of 32-bit words, GPU_PRINT_HEADER of
 * them, then the records.  The host writes the header before the launch
 * (gpu_print_header) and formats the records after it (gpu_print_output). */
enum {
    GPU_PRINT_OFFSET = 0, /* words of records reserved (may pass the capacity) */
    GPU_PRINT_CAPACITY,   /* words of records the buffer holds */
    GPU_PRINT_DROPPED,    /* prints whose record did not fit */
    GPU_PRINT_HEADER = 4
};
/* The IR_PRINT statements of f, each once, in the order that numbers
 * them (a record's first word); malloc'd list, -1: no memory. */
int gpu_print_statements(const ir_func *f, const ir_stmt ***out);
typedef struct gpu_print_table {
    int n;
    char **fmts;     /* backend_print_format, as the CPU's */
    ir_type **types; /* the values' types */
    int *nvals;
} gpu_print_table;
int gpu_print_table_init(gpu_print_table *t, const ir_func *f); /* its n; -1: no memory */
void gpu_print_table_free(gpu_print_table *t);
uint32_t gpu_print_capacity(void); /* record words per launch (TACK_PRINT_BUFFER bytes) */
void gpu_print_header(uint32_t header[GPU_PRINT_HEADER], uint32_t capacity);
/* Writes the lines of buf (the header, then its records) to stdout, and
 * to stderr how many were dropped; -1 on a malformed buffer or no memory. */
int gpu_print_output(const gpu_print_table *t, const char *kernel, const uint32_t *buf);

#endif

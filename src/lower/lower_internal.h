/*
 * lower_internal.h - what lower.c (expressions, statements) and inline.c
 * (device functions) share: the lowerer and its scopes.
 *
 * A scope maps the names of one function body to what they stand for: a
 * kernel parameter (whose role, array or scalar, is settled by its first
 * use) or a local.  The kernel is the outermost scope; each inlined device
 * function gets a fresh scope whose parameters are bound to the caller's
 * arguments, so names never leak between functions.
 */
#ifndef TACK_LOWER_INTERNAL_H
#define TACK_LOWER_INTERNAL_H

#include "lower.h"

typedef enum bind_kind { BIND_PARAM, BIND_LOCAL } bind_kind;

typedef struct binding {
    const char *name;
    bind_kind kind;
    int index; /* kernel parameter or local */
} binding;

#define MAX_RESULTS 16

typedef struct scope {
    struct scope *parent;
    const func_def *def;
    src_info src;
    int src_id;          /* ir_func.sources index */
    void *resolver_ctx;  /* names outside the function */
    binding *binds;
    int nbinds, cap;
    /* Device functions only: */
    int inline_id;       /* -1 in the kernel */
    int results[MAX_RESULTS]; /* result locals, made by the first `return v` */
    int nresults;        /* -1 until a return is seen; 0: returns no value */
} scope;

typedef struct lowerer {
    const lower_input *in;
    ir_func *f;
    tack_error *err;
    int failed;
    int loop_depth;
    scope *sc;
    arena scratch; /* ASTs of inlined device functions */
    int depth;     /* inlining depth */
    int temps;     /* counter for compiler temporaries' names */
} lowerer;

#define ERR(L, line, col, ...)                                                     \
    do {                                                                           \
        if (!(L)->failed++) src_error(&(L)->sc->src, line, col, (L)->err, __VA_ARGS__); \
    } while (0)

int lower_oom(lowerer *L);
int lower_resolve(lowerer *L, const char *name, tack_name *out);

const binding *scope_find(const scope *s, const char *name);
int scope_bind(lowerer *L, scope *s, const char *name, bind_kind kind, int index);

/* A fresh local with a name no user code can spell. */
int lower_temp(lowerer *L, const char *what);

ir_expr *lower_expr(lowerer *L, const expr *e);
int lower_block(lowerer *L, ir_block *out, stmt *const *body, int n);
int lower_declare_locals(lowerer *L, stmt *const *body, int n);

/* inline.c: `fn(args)` where fn is a device function (n: its resolution).
 * Returns an IR_INLINE expression; *results / *nresults give its result
 * locals (a tuple return has several). */
ir_expr *lower_device_call(lowerer *L, const expr *call, const tack_name *fn,
                           const int **results, int *nresults);
/* `return [v]` inside a device function. */
int lower_return(lowerer *L, ir_block *b, const stmt *s);

#endif

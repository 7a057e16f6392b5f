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

typedef enum bind_kind { BIND_PARAM, BIND_LOCAL, BIND_VECTOR, BIND_TEMPLATE,
                         BIND_SCRATCH, /* index: an ir_func.scratch array */
                         BIND_ROW,     /* index: the array of a row (views.c) */
                         BIND_REDUCTION, /* index: an ir_func.reductions entry */
                         BIND_PROLOGUE, /* value: assigned before the loop */
                         BIND_FINISHED, /* index: a reduction of an earlier loop */
                         BIND_STRUCT /* tmpl: a record value, its fields in locals "name.field" */
} bind_kind;

/* A template instance as lowering sees it: per field, the hidden parameter
 * holding it (arrays and scalars) or the nested template. */
typedef struct tmpl_node {
    const tack_struct *s;
    int *param;             /* per field: hidden parameter, or -1 */
    struct tmpl_node **sub; /* per field: nested template, or NULL */
    const char *path;       /* "f", "f.inner": for names and messages */
    int param0;             /* the kernel parameter it hangs off */
    const char *field_path; /* "" or "inner": the attributes from there */
} tmpl_node;

/* Components of the largest vector or matrix value (16x16,
 * tack.matrix(16, 16, dtype)). */
#define MAX_COMPONENTS 256

typedef struct binding {
    const char *name;
    bind_kind kind;
    int index;         /* kernel parameter or local */
    int width;         /* BIND_VECTOR: components, in locals comps[] */
    int rows;          /* BIND_VECTOR: a matrix's rows (row-major comps), 0: a vector */
    int comps[MAX_COMPONENTS];
    int holds_scalar;  /* BIND_LOCAL: a scalar was assigned to it */
    int owner;         /* inline_id of the scope it belongs to: names its locals */
    tmpl_node *tmpl;   /* BIND_TEMPLATE; BIND_STRUCT: an array of its struct (the layout) */
    int row_scratch;   /* BIND_ROW: of a scratch array, not a parameter */
    int nprefix;       /* BIND_ROW: the locals holding the row's indices */
    int prefix[TACK_MAX_NDIM];
    const expr *value; /* BIND_PROLOGUE: the value, lowered at each use */
    int line;          /* BIND_REDUCTION, BIND_PROLOGUE: where it is assigned */
    int busy;          /* BIND_PROLOGUE: its value is being lowered */
    int seg;           /* BIND_PROLOGUE: the top-level loop it comes before;
                          BIND_FINISHED: the loop that computes it */
    int cplx;          /* BIND_VECTOR: holds complex numbers (complex.c) */
    int quat;          /* BIND_VECTOR: holds quaternions (quaternions.c) */
} binding;

#define MAX_RESULTS 16
#define MAX_RESULT_LOCALS (2 * MAX_COMPONENTS) /* a tuple of vectors and matrices: all their components (two 16x16) */

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
    int results[MAX_RESULT_LOCALS]; /* result locals, made by the first `return v` */
    int nresults;        /* -1 until a return is seen; 0: returns no value */
    int result_width;    /* returns a vector of this many components (results[]) */
    int result_rows;     /* ... a matrix of this many rows; 0: a vector */
    int result_cplx;     /* ... a complex number (2 parts), not a 2-vector */
    int result_quat;     /* ... a quaternion, not a 4-vector */
    /* A tuple return: value k is results[slot_first[k]] (slot_width[k] 0)
     * or a vector or matrix in the slot_width[k] locals from there. */
    int slot_first[MAX_RESULTS], slot_width[MAX_RESULTS], slot_rows[MAX_RESULTS];
    int slot_cplx[MAX_RESULTS]; /* value k is a complex number */
    int slot_quat[MAX_RESULTS]; /* value k is a quaternion */
    /* Returns a record (structs.c): its layout, the results holding its
     * fields in struct_record_leaves' order; and the tuple return made
     * for the `return` being lowered. */
    struct tmpl_node *result_record;
    const stmt *record_return;
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
    int launch_exit; /* the inline id a launch-level `return` or `continue`
                        leaves (the launch body is then an IR_INLINE); -1 */
    int rng_state;   /* the hidden random state's local (random.c); -1 */
    int prologue_limit; /* names before the loop usable now: those of a
                           lower order (reductions.c) */
    int stage;       /* the top-level loop being lowered (in->stage) */
    int adjoint;     /* in->adjoint */
    int reading_seg; /* names assigned before this loop are readable (and
                        reductions of earlier loops) */
    int in_range;    /* lowering a launch's range */
    /* A device call whose record result is wanted (q = f(...), f(...).pos):
     * the call, and once lowered the callee that returned a record. */
    const expr *record_call;
    const struct scope *record_callee;
    /* Module-level tables read so far (scratch.c): the scratch array each
     * fills, per resolver context and name, and the stores that fill them,
     * put before the launch body's own statements once it is lowered. */
    struct {
        void *ctx;
        const char *name;
        int id;
    } tables[IR_MAX_SCRATCH];
    int ntables;
    ir_block table_stores;
    /* Scratch arrays made from a list of vectors (views.c): a row read
     * with one index fewer is a vector, as a module-level table's is. */
    unsigned char vector_rows[IR_MAX_SCRATCH];
    /* A complex scalar parameter's imaginary part: the hidden parameter
     * (plus one; 0 for none) that template_params added for it. */
    int cx_imag[TACK_MAX_PARAMS];
    /* Local arrays of complex numbers (scratch.c): a last hidden dimension
     * of 2 holds each element's real and imaginary parts. */
    unsigned char complex_rows[IR_MAX_SCRATCH];
} lowerer;

#define ERR(L, line, col, ...)                                                     \
    do {                                                                           \
        if (!(L)->failed++) src_error(&(L)->sc->src, line, col, (L)->err, __VA_ARGS__); \
    } while (0)

int lower_oom(lowerer *L);
/* Resolves the outside name `at` (an EX_NAME) and records the answer; a
 * name with no usable meaning is a compile error at `at`, and -1. */
int lower_resolve(lowerer *L, const expr *at, tack_name *out);

const binding *scope_find(const scope *s, const char *name);
int scope_bind(lowerer *L, scope *s, const char *name, bind_kind kind, int index);


/* A fresh local with a name no user code can spell. */
int lower_temp(lowerer *L, const char *what);
/* A read of local `local`, and `local = value` appended to b (vectors.c). */
ir_expr *lower_read_local(lowerer *L, int local, const expr *at);
int lower_set_local(lowerer *L, ir_block *b, int local, ir_expr *value, const expr *at);

ir_expr *lower_expr(lowerer *L, const expr *e);
/* IR nodes for lowering code (vector_builtins.c); NULL operands give NULL. */
ir_expr *lower_bin(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at);
ir_expr *lower_sel(lowerer *L, ir_expr *cond, ir_expr *a, ir_expr *b, const expr *at);
ir_expr *lower_ival(lowerer *L, int v, const expr *at); /* a weak integer literal */
int lower_block(lowerer *L, ir_block *out, stmt *const *body, int n);
/* static_loops.c: `for k in tack.static(range(...))` unrolled into b (0),
 * or 1 when it is to lower as the ordinary loop over the range. */
int static_for(lowerer *L, ir_block *b, const stmt *s, const expr *range_call);
/* `for i, j in tack.static(tack.ndindex(a, b))` unrolled into b; 0 or -1. */
int static_ndindex(lowerer *L, ir_block *b, const stmt *s, const expr *call);
/* for e in tack.static(TABLE): a module-level tuple, unrolled */
int static_table(lowerer *L, ir_block *b, const stmt *s, const expr *table);
int lower_declare_locals(lowerer *L, stmt *const *body, int n);

/* vectors.c: vector values, scalarized while lowering.  A vector value is
 * an IR_VECTOR: a setup block that computes its components into fresh
 * locals.  Consumers run the setup once, then read the components. */
int vec_width_of(lowerer *L, int param);       /* components: 0 unless an array of vectors
                                                  or matrices */
int mat_rows_of(lowerer *L, int param);        /* an array of matrices: rows, else 0 */
int vec_is(const ir_expr *e);                  /* a vector or a matrix value */
/* "3-component vector", "2x2 matrix" */
void vec_shape_name(const ir_expr *v, char *buf, size_t size);
ir_expr *vec_new(lowerer *L, int width, const expr *at);       /* empty setup */
ir_expr *mat_new(lowerer *L, int rows, int cols, const expr *at);
ir_expr *vec_component(lowerer *L, const ir_expr *v, int k, const expr *at); /* v.x ... */
ir_expr *vec_component_at(lowerer *L, const ir_expr *v, int k, const expr *at); /* any value */
ir_expr *vec_load(lowerer *L, int param, ir_expr **idx, int n, const expr *at);
int vec_store(lowerer *L, ir_block *b, int param, ir_expr **idx, int n, ir_expr *v, const stmt *at);
ir_expr *vec_binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at);
ir_expr *vec_unop(lowerer *L, ir_op op, ir_expr *a, const expr *at);
ir_expr *vec_cast(lowerer *L, ir_type to, ir_expr *a, const expr *at);
ir_expr *vec_call(lowerer *L, ir_intrinsic fn, ir_expr **args, int n, const expr *at);
ir_expr *vec_select(lowerer *L, ir_expr *cond, ir_expr *a, ir_expr *b, const expr *at);
ir_expr *vec_construct(lowerer *L, ir_type component, int width, ir_expr **args, int n, const expr *at);
ir_expr *vec_method(lowerer *L, const char *name, ir_expr *self, ir_expr **args, int n, const expr *at);
/* Reads or assigns a vector local (binding BIND_VECTOR). */
ir_expr *vec_read_local(lowerer *L, const binding *b, const expr *at);
int vec_assign_local(lowerer *L, ir_block *blk, binding *b, ir_expr *v, const stmt *at);
/* A vector whose components are `locals` after evaluating `setup` (an
 * inlined call returning a vector). */
ir_expr *vec_from_locals(lowerer *L, ir_expr *setup, const int *locals, int width, int rows,
                         const expr *at);
/* Statements that run v's setup: `eval` it before reading components. */
int vec_eval(lowerer *L, ir_block *b, ir_expr *v);
/* A CompileError at the first vector value left where a scalar was needed. */
int vec_check_none_left(lowerer *L, const ir_block *b);

/* calls.c: keyword arguments placed (e itself, or a copy; NULL after an
 * error), NumPy's scalar functions (1 and *out when path is numpy.X), and
 * local arrays from np.zeros/empty/ones/full and [v] * n (1: not one). */
const expr *calls_place_keywords(lowerer *L, const expr *e, const char *path);
int calls_numpy(lowerer *L, const expr *e, const char *path, ir_expr **out);
int calls_local_array(lowerer *L, ir_block *b, const stmt *s);
/* lower.c's classification, for calls.c: a callee's path ("numpy.zeros"),
 * and whether an expression names a cast (a dtype). */
typedef struct callee_info {
    int cast;
    ir_type type;
} callee_info;
int lower_callee_path(lowerer *L, const expr *callee, char *path, size_t size);
int lower_callee_cast(lowerer *L, const expr *d, char *path, size_t size, callee_info *out);

/* quaternions.c: quaternions, IR_VECTOR values of four parts marked quat. */
int qt_is(const ir_expr *e);
int qt_param(lowerer *L, int param); /* an array of quaternions */
ir_expr *qt_binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at);

/* complex.c: complex numbers, IR_VECTOR values of two parts marked cplx. */
int cx_is(const ir_expr *e);
int cx_param(lowerer *L, int param); /* an array of complex numbers */
ir_expr *cx_make(lowerer *L, ir_expr *re, ir_expr *im, const expr *at);
ir_expr *cx_binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at);
ir_expr *cx_unop(lowerer *L, ir_op op, ir_expr *a, const expr *at);
ir_expr *cx_part(lowerer *L, ir_expr *v, int imag, const expr *at); /* .real .imag */
ir_expr *cx_conj(lowerer *L, ir_expr *a, const expr *at);
ir_expr *cx_apply(lowerer *L, const char *leaf, ir_expr *a, const expr *at);
/* complex(), cmath.*, np.real/imag/conj: 1 when `path` names one. */
int cx_call(lowerer *L, const expr *e, const char *path, ir_expr **out);
int cx_polar(lowerer *L, ir_block *b, const expr *e, const char *path, ir_expr **out);
/* abs, exp, ... of a complex argument. */
int cx_intrinsic(lowerer *L, ir_intrinsic fn, ir_expr **args, int n, const expr *at, ir_expr **out);

/* matrices.c: matrix values (tack.mat22f ... mat44d), IR_VECTOR values
 * with dim = rows.  mat_call handles tack.mat*, tack.identity, outer,
 * determinant, inverse (kind: MAT_*); mat_matmul a @ b. */
enum { MAT_CONSTRUCT, MAT_IDENTITY, MAT_OUTER, MAT_DETERMINANT, MAT_INVERSE };
/* MAT_*, or -1; a constructor's shape in *rows: rows + 256 * cols (cols 0: square) */
int mat_function(const char *leaf, int *rows, ir_type *component);
ir_expr *mat_call(lowerer *L, int which, int rows, ir_type component, ir_expr **args, int n,
                  const expr *call);
ir_expr *mat_identity(lowerer *L, int n, ir_type component, const expr *at);
/* lu.c: determinant and inverse of square matrices beyond 4x4 (pivoted
 * elimination unrolled into scalar code). */
ir_expr *mat_lu_determinant(lowerer *L, ir_expr *m, const expr *at);
ir_expr *mat_lu_inverse(lowerer *L, ir_expr *m, const expr *at);
/* The components first.. of v: a scalar (count 1) or a vector (a row). */
ir_expr *mat_select(lowerer *L, ir_expr *v, int first, int count, const expr *at);
/* Whether e is x[i...] of an array of vectors or matrices. */
int mat_is_element_of(lowerer *L, const expr *e);
/* Whether subscript chain e (x[i], g[i][j]) is a whole element of an array
 * of vectors or matrices, not a row of it. */
int mat_chain_is_element(lowerer *L, const expr *e);
/* An assignment target that is a component: 1 of a local (v.x, m[r, c],
 * m[r]), 2 of an array element (x[i].x, x[i][r, c]), else 0. */
int mat_target_kind(lowerer *L, const expr *t);
/* Whether subscript e indexes a vector or matrix value (m[r, c],
 * x[i][r, c], (a @ b)[0, 1]) rather than an array; mat_subscript lowers it. */
int mat_is_value_subscript(lowerer *L, const expr *e);
ir_expr *mat_subscript(lowerer *L, const expr *e);
/* dynamic_components.c: v[k], m[r, c], m[r] with an index that is not a
 * literal (a select over the components). */
int dyn_is_dynamic(const expr *sub);
/* The local holding the flat (row-major) position sub picks from a value of
 * `rows` rows (0: a vector) and `width` components, set in b: below 0 when
 * outside; *count is 1, or a row's width for m[r].  -1 after an error. */
int dyn_flat_position(lowerer *L, ir_block *b, int rows, int width, const expr *sub, int *count);
ir_expr *dyn_subscript(lowerer *L, ir_expr *v, const expr *sub);
int dyn_assign(lowerer *L, ir_block *b, const binding *bound, const expr *sub, ir_expr *value,
               const stmt *at);
/* The one writer of an array element's components at run-time indices:
 * x[i][k], x[i][r, c] (a scalar) and x[i][r] (a row, a vector of the
 * matrix's width), element x[i] being `base` of parameter p and sub the
 * last subscript.  Per component the position may name, under its test,
 * a store (aop < 0) or an atomic aop.  value NULL: lowered from at's value
 * after the element's indices. */
int dyn_write_element(lowerer *L, ir_block *b, const expr *base, int p, const expr *sub,
                      ir_expr *value, int aop, const stmt *at);
/* `x[i].x op= v`: the atomic form, one IR_ATOMIC on the component, into b. */
int mat_component_update(lowerer *L, ir_block *b, const stmt *s, ir_atomic_op aop);
ir_expr *mat_matmul(lowerer *L, ir_expr *a, ir_expr *b, const expr *at);
ir_expr *mat_transpose(lowerer *L, ir_expr *m, const expr *at);
/* m[r, c] / m[r] / v[k] with constant indices: the component numbers
 * they name (k0, and count 1; or a row's), -1 after an error. */
int mat_component_index(lowerer *L, const ir_expr *v, const expr *sub, int *first, int *count,
                        int *stride);
/* Component stores: `v.x = s`, `m[r, c] = s`, `m[r] = row`, `x[i].x = s`,
 * `x[i][r, c] = s`.  Returns 1 when t is no such target. */
int mat_assign_component(lowerer *L, ir_block *b, const expr *t, ir_expr *value, const stmt *at);

/* textures.c: tex.sample(u, v, w) on a Texture3D parameter: trilinear
 * interpolation, normalized coordinates, clamp to edge. */
ir_expr *lower_texture_sample(lowerer *L, int param, ir_expr **coords, int n, const expr *at);

/* templates.c: `t.field`, `t.inner.field`: returns 1 and sets *node and
 * *field (-1 for a template itself), 0 when e is no template reference,
 * -1 after an error. */
int template_ref(lowerer *L, const expr *e, tmpl_node **node, int *field);
/* The kernel (or hidden) array parameter an expression names: a parameter
 * or a template's array attribute; -1 if none. */
int array_param_of(lowerer *L, const expr *e);
/* The value of t.field (a constant or an instance scalar). */
ir_expr *template_field_value(lowerer *L, tmpl_node *node, int field, const expr *at);
/* Creates hidden parameters for every template argument of the call. */
int template_params(lowerer *L, scope *kernel_scope);
/* t.method(args): the method, resolved through the class, inlined with
 * self bound to t. */
ir_expr *template_method_call(lowerer *L, const expr *call, tmpl_node *self);

/* inline.c: `fn(args)` where fn is a device function (n: its resolution).
 * Returns an IR_INLINE expression; *results / *nresults give its result
 * locals (a tuple return has several). */
ir_expr *lower_device_call(lowerer *L, const expr *call, const tack_name *fn,
                           const int **results, int *nresults);
/* a, b = fn(...): the callee's scope too, for the shapes of its values. */
ir_expr *lower_device_call_slots(lowerer *L, const expr *call, const tack_name *fn,
                                 const scope **callee);
/* The same for a method: self (not NULL) is bound to the first parameter. */
ir_expr *lower_method_call(lowerer *L, const expr *call, const tack_name *fn, tmpl_node *self,
                           const int **results, int *nresults);
/* `return [v]` inside a device function. */
int lower_return(lowerer *L, ir_block *b, const stmt *s);

/* The indices of a subscript `arr[items...]`; *p_out the array. */
ir_expr **lower_indices(lowerer *L, const expr *sub, int *p_out, int *n_out);

/* builtins.c: what math.X / tack.math.X (numpy: numpy.X) names, and the
 * builtins and module functions that are more than one intrinsic call. */
enum { SP_NONE, SP_POW, SP_MOD, SP_FLOORDIV, SP_ROUND, SP_LOG, SP_ULP, SP_DIVMOD, SP_FREXP,
       SP_MODF, SP_POLAR, SP_REFUSED };
typedef struct math_name {
    enum { MATH_NONE, MATH_INTRINSIC, MATH_CONST, MATH_SPECIAL } kind;
    ir_intrinsic fn; /* INTRINSIC */
    double value;    /* CONST */
    int special;     /* SPECIAL: SP_* */
} math_name;
math_name lower_math_name(const char *leaf, int numpy);
int lower_builtin_special(const char *name); /* SP_*, or 0 */
int lower_special_results(int special);      /* values it returns: 2 for divmod */
/* A call of `special` (path names it in messages); a tuple-valued one is
 * an error here, as it must be unpacked. */
ir_expr *lower_special_call(lowerer *L, const expr *call, int special, const char *path);
/* `a, b = divmod(x, y)` (frexp, modf): evaluates the arguments into
 * temporaries in b and puts the two values, reading them, in out. Returns
 * 2, or -1 after an error. */
int lower_tuple_call(lowerer *L, ir_block *b, const expr *call, int special, const char *path,
                     ir_expr **out);

/* updates.c: `a[k] op= v`.  update_choice makes the IF that holds both
 * forms (the caller lowers the plain one into its body);
 * update_atomic_form lowers the atomic one into its orelse;
 * lower_resolve_updates keeps one form of each, once the kernel is
 * lowered: plain where the element is the iteration's own. */
ir_stmt *update_choice(lowerer *L, const stmt *s);
int update_atomic_form(lowerer *L, ir_stmt *choice, const stmt *s, ir_op op);
int lower_resolve_updates(lowerer *L);
/* scratch.c: `a = tack.local(shape, dtype)` / `tack.shared(...)` (s is
 * the assignment; dtype already classified), and uses of such a name. */
int scratch_declare(lowerer *L, ir_block *b, const stmt *s, int shared, ir_type dtype, int cplx);
/* The part type (TACK_F32 or TACK_F64) of the complex dtype `path` names
 * (tack.complex64, numpy.complex128, complex, ...), or -1. */
ir_type cx_dtype_named(const char *path);
/* Its scratch index, or -1; a name bound outside to a table of numbers
 * (TACK_NAME_TABLE) is the scratch array holding it. */
int scratch_of(lowerer *L, const expr *arr);
/* Whether scratch array `id` holds a module-level table (read only). */
int scratch_is_table(const lowerer *L, int id);
/* Once lowered: the tables' stores, before the launch body's statements. */
int scratch_fill_tables(lowerer *L);
ir_expr *scratch_load(lowerer *L, int id, const expr *sub);
ir_expr *scratch_load_at(lowerer *L, int id, ir_expr **idx, int n, const expr *at);
int scratch_store(lowerer *L, ir_block *b, int id, const expr *sub, ir_expr *value,
                  const stmt *at);
ir_expr *scratch_dim(lowerer *L, int id, int d, const expr *at); /* a.shape[d] */
/* array_reductions.c: np.sum(a) a.sum() np.prod np.max np.min (amax amin)
 * and np.dot(a, b) of 1-D local arrays, as a loop.  array_reduction_name
 * gives the reduction a name (sum, prod, max, amax, min, amin, dot) is,
 * or -1; `what` names the call in messages. */
int array_reduction_name(const char *name);
ir_expr *array_reduce(lowerer *L, int which, const expr *first, const expr *second,
                      const char *what, const expr *at);

/* views.c: rows, sequences, shape and tuples.  A view is the array an
 * indexing expression reaches and the indices that select its row. */
typedef struct view {
    int param, scratch;  /* the array: a parameter or a scratch one (-1) */
    ir_expr **prefix;    /* the row's indices, lowered */
    int nprefix;         /* 0: arr is no row (its base is not looked up) */
} view;
int view_of(lowerer *L, const expr *arr, view *v);
int view_name_is_indexed(lowerer *L, const char *name);
/* Each returns 1 (nothing emitted) when the statement is not its kind. */
int view_assign_row(lowerer *L, ir_block *b, const stmt *s);   /* row = b[i] */
/* The most indices `name[...]` takes at once in body (matrices.c). */
int lower_widest_index(stmt *const *body, int n, const char *name);
int view_bind_parameter(lowerer *L, scope *callee, ir_block *b, const func_def *def,
                        const char *pname, const expr *arg); /* f(b[i]), f(row), f(local) */
int view_for(lowerer *L, ir_block *b, const stmt *s);          /* for v in seq */
int view_unpack_shape(lowerer *L, ir_block *b, const stmt *s); /* n, m = a.shape */
int view_assign_tuple(lowerer *L, ir_block *b, const stmt *s); /* w = (1.0, 2.0) */
/* seq[idx...]: the element of a view's array at n full indices. */
ir_expr *view_element(lowerer *L, const view *v, ir_expr **idx, int n, const expr *at);
/* lower.c: target = value for a NAME or SUBSCRIPT target; marks the read
 * of dimension d of array parameter p (for x.shape[d]). */
int lower_assign_to(lowerer *L, ir_block *b, const expr *t, ir_expr *value, const stmt *at);
int use_dim(lowerer *L, int p, int d, const expr *at);
int use_param(lowerer *L, int p, ir_param_role role, int line, int col);

/* random.c: tack.rng/uniform/normal/randint and Numba's np.random.*:
 * random_name gives the RND_* a dotted path names (-1: none). */
enum { RND_RNG, RND_UNIFORM, RND_NORMAL, RND_RANDINT, RND_NP_RANDOM, RND_NP_UNIFORM,
       RND_NP_NORMAL };
int random_name(const char *path);
ir_expr *lower_random_call(lowerer *L, const expr *call, int which, const char *path);
/* Once lowered: the hidden seed parameter of the per-iteration streams. */
int lower_random_streams(lowerer *L);

/* workgroups.c: tack.<name> for workgroups. */
enum { WG_LOCAL, WG_SHARED, WG_BARRIER, WG_LOCAL_INDEX, WG_GROUP_INDEX, WG_SIZE };
int workgroup_name(const char *leaf); /* WG_*, or -1 */
ir_expr *workgroup_value(lowerer *L, int which, const expr *e);
int workgroup_barrier(lowerer *L, ir_block *b, const stmt *s);
/* Once lowered: a collective kernel's launch and barriers. */
int lower_check_collective(lowerer *L);

/* reductions.c: statements before and after the parallel loop.
 * lower_statements_around checks the kernel's body (names assigned
 * before the loop, the loop at *loop_at, a final return) and binds the
 * names from before it (reductions, or values lowered at each use). */
int lower_statements_around(lowerer *L, const stmt **loop);
/* A read of a reduction finished by an earlier loop. */
ir_expr *lower_finished_reduction(lowerer *L, const binding *b, const expr *at);
ir_expr *lower_prologue_value(lowerer *L, binding *b, const expr *at);
int lower_reduction_read_error(lowerer *L, const binding *b, const expr *at);
/* `s op= v` or `s = min(s, v)` on reduction `bound`. */
int lower_reduction_update(lowerer *L, ir_block *b, const stmt *s, const binding *bound);
/* `return s[, t]` after the loop. */
int lower_kernel_results(lowerer *L, const stmt *s);
/* kernel_results.c: a returned expression's hidden reduction
 * ('_tack_resultK', top_statements.c): its type and start. */
int lower_is_result_name(const char *name);
typedef struct lower_result_shape {
    int width, rows, cplx; /* width 0: a scalar */
    ir_type type;          /* the components' */
} lower_result_shape;
int lower_result_type(lowerer *L, const expr *value, ir_type *type, double *start,
                      lower_result_shape *shape);
/* lower.c: whether call e is free of effects (a cast, a math function). */
int lower_call_is_pure(lowerer *L, const expr *e);
/* print.c: print(...) as a statement, appended to b. */
int lower_print(lowerer *L, ir_block *b, const expr *call);

/* vectors.c: the atomic form for an array of vectors, per component. */
ir_expr *vec_atomic(lowerer *L, int param, ir_expr **idx, int n, ir_atomic_op op, ir_expr *v,
                    const expr *at);
int vec_discard(lowerer *L, ir_block *b, ir_expr *v);
int vec_atomic_update(lowerer *L, ir_block *b, int param, ir_expr **idx, int n, ir_atomic_op op,
                      ir_expr *v, const stmt *at);


/* vector_builtins.c: tack.cross, length, normalize, ddot, trace, diag,
 * skew, sign, clamp, lerp, smoothstep, step, min/max/abs, ... (VB_*), and
 * Taichi's methods (v.norm(), m.trace(), v.sum(), ...). */
enum { VB_CROSS, VB_LENGTH, VB_LENGTH_SQ, VB_NORMALIZE, VB_DOT, VB_DDOT, VB_TRACE, VB_DIAG,
       VB_GET_DIAG, VB_SKEW, VB_TRANSPOSE, VB_SIGN, VB_CLAMP, VB_LERP, VB_SMOOTHSTEP, VB_STEP,
       VB_MIN, VB_MAX, VB_ABS, VB_CW_MUL, VB_CW_DIV, VB_FROM_ROWS, VB_FROM_COLS, VB_ARGMIN,
       VB_ARGMAX, VB_VEC2, VB_VEC3, VB_VEC4, VB_VECN, VB_QUAT, VB_SUM,
       VB_WHERE, VB_SELECT };
int vb_function(const char *leaf); /* VB_*, or -1 */
ir_expr *vb_call(lowerer *L, int which, ir_expr **args, int n, const expr *at);
int vb_is_method(const char *name);
ir_expr *vb_method(lowerer *L, const char *name, ir_expr *self, ir_expr **args, int n,
                   const expr *at);
/* a, b, c = v (1: the value is not a vector); vb_held: a vector reading
 * the component locals of v, whose setup has already run. */
int vb_unpack(lowerer *L, ir_block *b, const stmt *s);
int vb_unpack_value(lowerer *L, ir_block *b, const stmt *s, ir_expr *v); /* v lowered already */
ir_expr *vb_held(lowerer *L, const ir_expr *v, const expr *at);
/* structs.c: arrays of @tack.struct records (templates marked as such):
 * the statement with x[i].f read as x.f[i], x.shape and len(x) as the
 * first field's; s itself when nothing changes, NULL after an error. */
int struct_is_records(const tack_struct *s);
/* The struct's name for messages ("Particle", not "ParticleArray"). */
void struct_name(const tack_struct *s, char *buf, size_t size);
const stmt *struct_rewrite_stmt(lowerer *L, const stmt *s);
/* A statement that moves a whole record (p = x[i], x[j] = p, q = p,
 * x[j] = x[i], p.inner = q.inner) as one statement per field, in *out
 * (1); 0 when s moves no record, -1 after an error. */
int struct_value_expand(lowerer *L, const stmt *s, const stmt ***out, int *n);
/* `return <record>` in a device function: statements that hold the record
 * and a tuple return of its fields (1); 0 when s returns no record. */
int struct_return_expand(lowerer *L, const stmt *s, const stmt ***out, int *n);
/* return f(...) of a device call `call` (lowered) whose callee returned
 * a record: this function returns it too. */
int struct_return_call(lowerer *L, ir_block *b, const stmt *s, ir_expr *call,
                       const scope *callee);
/* inline.c: the tail of a `return` of n values already lowered. */
int inline_return_values(lowerer *L, ir_block *b, const stmt *s, ir_expr **values, int n);
/* q = f(...), x[j] = f(...) where the device call `call` (lowered) returned
 * a record from `callee`: its fields assigned to the target's. */
int struct_assign_call(lowerer *L, ir_block *b, const stmt *s, ir_expr *call,
                       const scope *callee);
/* f(...).pos, f(...).inner.h: 1 with *out the field's value (NULL after an
 * error), 0 when e reads no field of a device call's record. */
int struct_call_field(lowerer *L, const expr *e, ir_expr **out);
/* A device function's parameter bound to a record value (1), 0 when the
 * argument is none, -1 after an error: its fields are lowered in the
 * caller's scope and assigned to the callee's locals "pname.field". */
int struct_bind_argument(lowerer *L, scope *callee, ir_block *body, const char *pname,
                         const expr *arg);
/* inline.c: binds `pname` in the callee to a copy of v, lowered in the caller. */
int inline_bind_value(lowerer *L, scope *callee, ir_block *body, const char *pname, ir_expr *v,
                      const expr *arg);
/* The array whose shape x.shape and len(x) read: x, or for records its
 * first field's array; NULL after an error. */
const expr *struct_dim_array(lowerer *L, const expr *arr);

#endif

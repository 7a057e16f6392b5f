/*
 * ir.h - Tack's typed IR: a structured tree (expressions and statements)
 * that lowering produces from the AST and the passes refine until every
 * node has a concrete type and the code generator can emit it directly.
 *
 * An IR function lives in one arena.  The IR template (what lowering
 * produces) is immutable once published; each variant clones it and runs
 * the passes on its private copy.
 */
#ifndef TACK_IR_H
#define TACK_IR_H

#include <stdint.h>
#include "tack.h"
#include "util/arena.h"

/* Types: the concrete element types of tack.h, plus the "weak" types of
 * literals, which take the type of whatever they meet (as NumPy's NEP 50).
 * TACK_F16 is only ever an array's element type: its elements are f32
 * values (ir_value_type), and after inference no expression is f16. */
typedef int ir_type;
enum {
    IRT_UNSET = -1,
    IRT_WEAK_INT = 100,
    IRT_WEAK_FLOAT = 101,
    IRT_VOID = 102,
    IRT_LIKE_PARAM = 103 /* IR_CAST only: to the element type of param `index` */
};
int ir_type_is_int(ir_type t);      /* concrete or weak integer */
int ir_type_is_signed(ir_type t);
int ir_type_is_float(ir_type t);
int ir_type_bits(ir_type t);        /* 1 for bool */
ir_type ir_value_type(ir_type element); /* an array element's value type: f16 -> f32 */
const char *ir_type_name(ir_type t);

typedef enum ir_op {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW,
    OP_AND, OP_OR, OP_XOR, OP_SHL, OP_SHR,
    OP_NEG, OP_POS, OP_INVERT, OP_NOT,
    OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE
} ir_op;

typedef enum ir_atomic_op {
    ATOM_ADD, ATOM_SUB, ATOM_MIN, ATOM_MAX, ATOM_AND, ATOM_OR, ATOM_XOR, ATOM_EXCHANGE,
    ATOM_COMPARE_EXCHANGE,
    ATOM_MUL, /* product reductions only (s *= v): no tack.atomic_mul */
    ATOM_COUNT
} ir_atomic_op;
/* "add", ..., "compare_exchange": tack.atomic_<name>; "mul" only names
 * ATOM_MUL in messages and generated helpers. */
const char *ir_atomic_name(ir_atomic_op op);

/* Intrinsic functions a kernel may call. */
typedef enum ir_intrinsic {
#define TACK_INTRINSIC(id, name, nargs) id,
#include "intrinsics.def"
#undef TACK_INTRINSIC
    INTR_COUNT
} ir_intrinsic;
const char *ir_intrinsic_name(ir_intrinsic f);
int ir_intrinsic_nargs(ir_intrinsic f); /* -1: two or more */
/* The factor degrees() / radians() multiply by in type t: NumPy's, whose
 * f32 constant is 180.0f / (float)pi computed in f32. */
double ir_angle_factor(ir_intrinsic f, ir_type t);

typedef enum ir_expr_kind {
    IR_CONST,  /* literal: type + i/u/f */
    IR_PARAM,  /* a scalar parameter's value */
    IR_LOCAL,  /* a local variable */
    IR_DIM,    /* param's dimension d; resolved to a literal in the body */
    IR_LOAD,   /* array param [index...] */
    IR_BINOP,  /* a op b (arithmetic, bitwise, comparison) */
    IR_UNOP,   /* op a */
    IR_ANDOR,  /* short-circuit a and/or b (op OP_AND / OP_OR) */
    IR_SELECT, /* a if cond else b; only the chosen side is evaluated */
    IR_CAST,   /* a converted to type */
    IR_CALL,   /* intrinsic(args...) */
    IR_ATOMIC, /* atomic read-modify-write of array param [index...]; a is the
                  operand (compare_exchange: a expected, b desired); the
                  value is the element's old value */
    IR_VECTOR, /* lowering only: a vector value; run `body`, then its
                  components are args[0..nargs) (reads of locals).  None
                  survives lowering (a leftover is a compile error). */
    IR_INLINE, /* an inlined device function: run `body`, then the value is
                  local `index` (-1: no value); IR_EXIT with the same
                  inline_id leaves the body (a `return`) */
    IR_SLOAD   /* scratch array `index` (ir_func.scratch) [index...] */
} ir_expr_kind;

typedef struct ir_block ir_block;
typedef struct ir_expr ir_expr;
struct ir_expr {
    ir_expr_kind kind;
    ir_type type;     /* IRT_UNSET until inference */
    int line, col;    /* source position, relative to source `src` */
    int src;          /* index into ir_func.sources: 0 is the kernel */
    ir_op op;
    int index;        /* PARAM/LOAD/DIM: param; LOCAL: local */
    int dim;          /* DIM; ATOMIC: 1 when it is an augmented update
                         `a[k] op= v` (messages say so), else 0; LOAD: 1
                         when no other iteration reads the element, whatever
                         its index (adjoint_gather.c), else 0 */
    ir_intrinsic fn;  /* CALL */
    int64_t i;        /* CONST (ints and bools) */
    double f;         /* CONST (floats) */
    ir_expr *a, *b, *cond;
    ir_expr **args;   /* LOAD indices, CALL arguments */
    int nargs;
    ir_atomic_op atomic; /* ATOMIC */
    ir_block *body;   /* INLINE */
    int inline_id;    /* INLINE */
    /* INLINE: the Texture3D parameter whose tex.sample() this body computes
     * in software, else -1.  Its first three statements assign the
     * coordinates (u, v, w), cast to the texture's type, to locals, so a
     * GPU dialect with hardware filtering can sample from those instead. */
    int sample;
    /* CAST: the conversion resolve_dims puts around an array index before
     * its address arithmetic; inference refuses a float operand.  2: the
     * seed of tack.rng(seed, i) made u64, whose float operand is refused
     * too (it would be truncated). */
    int index_cast;
    /* IR_VECTOR (lowering only): a complex number's two parts (complex.c) */
    int cplx;
    /* IR_VECTOR (lowering only): a quaternion, x y z w (quaternions.c) */
    int quat;
};

typedef enum ir_stmt_kind {
    IR_ASSIGN,  /* local = value */
    IR_STORE,   /* array param [index...] = value */
    IR_IF,      /* if cond: body else: orelse */
    IR_WHILE,   /* while cond: body */
    IR_FOR,     /* for local in range(start, stop, step): body */
    IR_BREAK, IR_CONTINUE,
    IR_EVAL,    /* evaluate value for its effects (an inlined call) */
    IR_EXIT,    /* leave the IR_INLINE body with inline_id `index` */
    IR_BOUNDS_FAIL, /* debug mode: access site `index` was out of bounds with
                      the index values `indices` (locals' reads); records it
                      in the errors parameter (see passes/bounds.c) */
    IR_SSTORE,  /* scratch array `index` [indices...] = value */
    IR_BARRIER, /* every lane of the workgroup waits here (tack.barrier()) */
    IR_PRINT    /* print(): texts[0] indices[0] texts[1] ... texts[n] as one
                   line of output (lower/print.c); the values are any
                   scalars, formatted by their type (see docs/language.md) */
} ir_stmt_kind;

typedef struct ir_stmt ir_stmt;
struct ir_block {
    ir_stmt **stmts;
    int n, cap;
};

struct ir_stmt {
    ir_stmt_kind kind;
    int line, col;
    int src;
    int index;          /* ASSIGN/FOR: local; STORE: param */
    ir_expr *value;     /* ASSIGN/STORE value; IF/WHILE cond */
    ir_expr **indices;  /* STORE */
    int nindices;
    ir_expr *start, *stop, *step; /* FOR */
    ir_block body, orelse;
    /* IF, lowering only: an augmented update `a[k] op= v`, whose body is
     * the plain load and store and orelse the atomic form (empty when op
     * has none); lower_kernel keeps one (updates.c).  Never serialized. */
    int update;
    /* PRINT: nindices + 1 texts around the values, NUL-free. */
    const char **texts;
};

/* How the body uses a parameter; a call must match. */
typedef enum ir_param_role {
    ROLE_UNUSED = 0, ROLE_SCALAR, ROLE_ARRAY,
    ROLE_TEMPLATE /* a template instance, expanded into hidden parameters */
} ir_param_role;

typedef struct ir_param {
    const char *name;
    ir_param_role role;
    int index_ndim;   /* arrays: indices per access (0: never indexed) */
    int max_dim_read; /* arrays: highest d in x.shape[d], -1 if none */
    int written;      /* arrays: the kernel may store to it */
    int vec_width;    /* arrays of vectors: components (the last storage
                         dimension, keyed by vec_sig rather than shape_sig) */
    int sampled;      /* a Texture3D: the kernel calls .sample() on it */
    ir_type type;     /* set per variant from the call */
    int line, col;    /* the def's parameter, for messages */
} ir_param;

typedef struct ir_local {
    const char *name;
    ir_type type; /* set by inference */
} ir_local;

/* A source text that IR nodes point into: the kernel's, then each inlined
 * device function's, so messages name the right file and line. */
typedef struct ir_source {
    const char *text, *filename, *name;
    int first_line;
    int is_function; /* an inlined device function's source */
    /* How lowering reached it, so that a cached template's names can be
     * resolved again: `via` resolved in source `parent` (a device
     * function), or method `via` of the template at kernel parameter
     * `via_param` and attribute path `via_path` ("" or "inner.sub"). */
    int parent;
    int via_param;      /* -1 for a device function */
    const char *via, *via_path;
} ir_source;

/* An array the kernel allocates itself: tack.local(shape, dtype), zeroed
 * for each iteration, or tack.shared(shape, dtype), one per workgroup.
 * Its shape is part of the source (literals and constants), so it needs
 * no key. */
typedef struct ir_scratch {
    const char *name;
    ir_type type;  /* a dtype, never f16 or bool; IRT_WEAK_FLOAT (a tuple of
                      float literals) until inference gives the float type */
    int ndim;
    int64_t dims[TACK_MAX_NDIM];
    int shared;
} ir_scratch;

#define IR_SCRATCH_MAX_ELEMENTS (1 << 20)
#define IR_MAX_SCRATCH 16

/* An outside name lowering resolved, with a digest of what it was bound to
 * (a device function's source, a constant's value, a module's name): the
 * disk cache uses a stored kernel only while every name still resolves to
 * the same thing. */
typedef struct ir_resolution {
    int src;           /* the source the name appears in */
    const char *name;
    char digest[65];   /* hex SHA-256 of the binding's fingerprint */
} ir_resolution;

/* A plain kernel's per-access checks (passes/bounds.c) count the failures
 * of site s in the local named IR_BOUNDS_FLAG followed by s: locals
 * persist across the iterations a CPU chunk or a GPU work item runs, and
 * after its last one the backend records s + 1 for a nonzero count in the
 * errors array's DEBUG_ERR_FLAG (the greatest such). */
#define IR_BOUNDS_FLAG "$bounds"

/* An array access checked in debug mode, for the message after a launch. */
typedef struct ir_site {
    int src, line, col;
    int param;         /* the array: a parameter, or scratch array -1 - param */
} ir_site;

/* A reduction (lower/reductions.c): a scalar assigned a constant before
 * the parallel loop and combined into by its iterations (s += v, s =
 * min(s, v), ...).  It lives in a hidden one-element array parameter that
 * the runtime fills with the initial value before the launch and reads
 * back after it; the loop updates it atomically. */
#define IR_MAX_REDUCTIONS 16 /* a mat44 reduction is 16 (one per component) */
#define IR_MAX_STAGES 8 /* top-level loops in one kernel */
/* One value of a kernel's `return`: `count` consecutive returns[]. */
typedef struct ir_return_value {
    tack_result_kind kind;
    int count, rows, cols; /* rows: a matrix's (0 otherwise) */
} ir_return_value;
typedef struct ir_reduction {
    int param;        /* the hidden array */
    ir_atomic_op op;  /* ATOM_ADD, SUB, MIN, MAX, AND, OR, XOR or MUL */
    ir_type type;     /* the initial value's: a dtype, or IRT_WEAK_INT /
                         IRT_WEAK_FLOAT (i64 / the kernel's default float) */
    int64_t i;        /* the initial value (integer types) */
    double f;         /* the initial value (float types) */
} ir_reduction;

typedef struct ir_func {
    arena mem;
    ir_site *sites;    /* debug mode: the checked accesses */
    int nsites;
    int debug_errors;  /* debug mode: the hidden errors and extents arrays */
    int debug_extents; /* (parameter indices; -1 in a plain build) */
    ir_resolution *resolved;
    int nresolved;
    ir_source *sources;
    int nsources;
    int ninlines;        /* inline ids handed out */
    int cur_src;         /* the source new nodes belong to (lowering) */
    const char *name;
    const char *filename;
    int first_line;
    const char *source;
    ir_param *params;    /* grows only through ir_param_add */
    int nparams, params_cap;
    ir_local *locals;
    int nlocals, locals_cap;
    /* The parallel launch: for local `loop_var` in range(start, stop, step);
     * for tack.ndindex(e0, e1[, e2]) also the inner dimensions, each
     * `inner_var[d]` in range(inner_stop[d]), run sequentially inside each
     * outer iteration.  All stops are runtime values (never baked in). */
    ir_scratch *scratch; /* the kernel's own arrays */
    int nscratch;
    /* Collective: uses workgroups (tack.shared, tack.barrier(),
     * tack.local_index()...); every launch is whole workgroups of
     * IR_WORKGROUP lanes, and only GPU devices run it. */
    int collective;
    int rng_seed;        /* the hidden u64 seed parameter of Numba-style
                            random draws (np.random.random()); -1 none */
    int nreductions;
    ir_reduction reductions[IR_MAX_REDUCTIONS];
    int nreturns;        /* `return s[, t]` after the loop: reductions */
    int returns[IR_MAX_REDUCTIONS];
    /* The values those numbers make, in order (tack_results' values[]):
     * a scalar is one return, a complex two, a vector or matrix its
     * components (row-major). */
    int nreturn_values;
    ir_return_value return_values[TACK_MAX_RESULT_VALUES];
    int loop_var;
    ir_expr *start, *stop, *step;
    /* An adjoint variant's `stop` with its dimensions made literals
     * (resolve.c), which the gather form's guards compare with inside the
     * body (passes/adjoint_gather.c); NULL otherwise.  Not cloned. */
    ir_expr *stop_in_body;
    int ninner;
    int inner_var[2];
    ir_expr *inner_stop[2];
    ir_block body;
    /* Set by passes on a variant's copy. */
    ir_type default_float; /* f64 when any array argument is f64, else f32 */
    int disjoint;          /* the call's arrays do not overlap: noalias */
    /* An adjoint kernel (passes/adjoint.c): the forward kernel's parameter
     * count, each followed at n + i by its gradient array; 0 otherwise. */
    int adjoint_n;
    /* Inference met tack.stop_gradient (pass_strip_stop_gradient removes it). */
    int uses_stop_gradient;
} ir_func;

/* Lanes in a workgroup (tack.WORKGROUP). */
#define IR_WORKGROUP 256
#define IR_WORKGROUP_SHIFT 8 /* log2(IR_WORKGROUP): i >> 8 is the group */

/* Construction (lowering and passes). */
ir_func *ir_func_new(void);
void ir_func_free(ir_func *f);
ir_expr *ir_expr_new(ir_func *f, ir_expr_kind kind, int line, int col);
ir_stmt *ir_stmt_new(ir_func *f, ir_stmt_kind kind, int line, int col);
int ir_block_push(ir_func *f, ir_block *b, ir_stmt *s); /* 0, or -1 no memory */
int ir_local_add(ir_func *f, const char *name);          /* index or -1 */
/* Appends a parameter (zeroed, untyped, no dimension read): lowering's
 * template attributes and debug mode's hidden arrays.  Returns its index,
 * or -1 when there are TACK_MAX_PARAMS already or no memory. */
int ir_param_add(ir_func *f);
/* The reduction held in parameter p, or -1. */
int ir_reduction_of_param(const ir_func *f, int p);
int ir_local_find(const ir_func *f, const char *name);   /* index or -1 */
/* Whether local l is assigned anywhere in b (a for loop's variable too). */
int ir_block_assigns(const ir_block *b, int l);

/* A read-only walk over every expression and statement (walk.c): each
 * hook that is set is called with ctx; a nonzero return stops the walk,
 * and the walk returns it.  `expr` sees an expression before its operands
 * (value_of: the statement whose whole value e is, else NULL); `stmt` a
 * statement before its parts; `before_blocks` a statement after its value,
 * loop bounds and indices, before its body and else. */
typedef struct ir_walker {
    int (*expr)(void *ctx, const ir_expr *e, const ir_stmt *value_of);
    int (*stmt)(void *ctx, const ir_stmt *s);
    int (*before_blocks)(void *ctx, const ir_stmt *s);
    void *ctx;
} ir_walker;
int ir_walk_expr(const ir_walker *w, const ir_expr *e);
int ir_walk_stmt(const ir_walker *w, const ir_stmt *s);
int ir_walk_block(const ir_walker *w, const ir_block *b);
/* The launch's start, stop and step, then the body. */
int ir_walk_func(const ir_walker *w, const ir_func *f);
/* Site s when local l is a per-access check's count, else -1. */
int ir_bounds_flag_site(const ir_func *f, int l);
/* Appends a scratch array (name copied); its index, or -1 (no memory, or
 * IR_MAX_SCRATCH already). */
int ir_scratch_add(ir_func *f, const ir_scratch *a);
/* Elements of scratch array a. */
int64_t ir_scratch_size(const ir_scratch *a);
ir_expr *ir_const_int(ir_func *f, int64_t v, ir_type t, int line, int col);
ir_expr *ir_const_float(ir_func *f, double v, ir_type t, int line, int col);
ir_expr *ir_cast(ir_func *f, ir_expr *e, ir_type to);

/* An integer index as a known linear form, axis + sign * scalar + c,
 * exact in i64 (index_form.c).  Launch bounds checks and the privacy of
 * augmented updates both reason with it. */
typedef struct ir_index_form {
    int ok;
    int axis;   /* -1 none; 0 the launch variable; 1, 2 the inner ndindex ones;
                   IR_AXIS_GROUP, IR_AXIS_LANE (below) */
    int scalar; /* a scalar parameter, or -1 */
    int sign;   /* the scalar's coefficient: +1 or -1 */
    int64_t c;
} ir_index_form;

/* The launch variable's workgroup and lane, i >> 8 and i & 255 (what
 * tack.group_index() and tack.local_index() lower to): forms of their own,
 * as two lanes share a group and two groups a lane. */
#define IR_AXIS_GROUP 3
#define IR_AXIS_LANE 4

extern const ir_index_form ir_form_unknown;
/* e's form, reading locals' forms from known[] (one per local: what the
 * caller has established holds at e). */
ir_index_form ir_index_form_of(const ir_func *f, const ir_index_form *known, const ir_expr *e);
int ir_same_form(ir_index_form a, ir_index_form b);
/* Code that may or may not run: every local it may assign (and each
 * inlined call's result) becomes unknown in known[]. */
void ir_forget_expr(ir_index_form *known, const ir_expr *e);
void ir_forget_stmt(ir_index_form *known, const ir_stmt *s);
void ir_forget_block(ir_index_form *known, const ir_block *b);

/* A deep copy into a new arena (a variant's private IR). */
ir_func *ir_clone(const ir_func *f);
/* A deep copy of e in f's arena (NULL: no memory). */
ir_expr *ir_clone_expr(ir_func *f, const ir_expr *e);
/* A copy that shares nothing with f (ir_clone shares texts with the
 * template): it may outlive f and its template. */
ir_func *ir_clone_owned(const ir_func *f);

/* The digest of what a name resolved to (hex SHA-256); 0, or -1 no memory. */
int ir_name_digest(const tack_name *n, char out[65]);
/* Records that `name` (in source src) resolved to `n`; 0, or -1 no memory. */
int ir_record_resolution(ir_func *f, int src, const char *name, const tack_name *n);

/* Adds a source; returns its index or -1.  The strings are copied. */
int ir_source_add(ir_func *f, const char *text, const char *filename, const char *name,
                  int first_line);
/* Records how source `src` was reached (see ir_source). */
int ir_source_via(ir_func *f, int src, int parent, const char *via, int via_param,
                  const char *via_path);

/* Checks the IR's invariants after `pass`; `typed` requires every node to
 * have a concrete type.  On failure fills err with TACK_ERR_INTERNAL naming
 * the pass and returns it. */
tack_status ir_verify(const ir_func *f, const char *pass, int typed, tack_error *err);

/* Writes a readable text form (for debugging and tests). */
char *ir_print(const ir_func *f); /* malloc'd */

/* literals.c: a tree of integer literals (2**32, -128, 600 // 3) folded
 * as Python computes it.  literal_meets: 0 when e is no such tree, or its
 * value fits type t (then e becomes that constant); -1 with the message
 * (naming the literal and t) when it does not (NEP 50's OverflowError).
 * literal_value: 0 and the value's sign and magnitude (*huge when it is
 * beyond 2**64 - 1 in size), or -1 when e is no such tree. */
int literal_meets(ir_expr *e, ir_type t, char *msg, size_t size);
int literal_value(const ir_expr *e, int *negative, uint64_t *magnitude, int *huge, char *text,
                  size_t size); /* text (may be NULL): the value in decimal */

#endif

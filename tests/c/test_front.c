/* test_front.c - tokenizer and parser: tokens, precedence, statements,
 * compile errors, and a crash hunt over damaged sources. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "front/ast.h"

static src_info mk_src(const char *text) {
    src_info s = {text, "k.py", 10, NULL, 0};
    return s;
}

static tack_status parse(const char *text, arena *a, func_def **f, tack_error *err) {
    src_info s = mk_src(text);
    memset(err, 0, sizeof *err);
    return parse_function(&s, a, f, err);
}

/* ---- expression dump: (op a b) s-expressions ---------------------------- */

static void dump(const expr *e, char *b, size_t cap) {
    size_t n = strlen(b);
    char *o = b + n;
    cap -= n;
    switch (e->kind) {
    case EX_NAME: snprintf(o, cap, "%s", e->name); return;
    case EX_INT: snprintf(o, cap, "%llu", (unsigned long long)e->ival); return;
    case EX_FLOAT: snprintf(o, cap, "%g", e->fval); return;
    case EX_BOOL: snprintf(o, cap, "%s", e->bval ? "True" : "False"); return;
    case EX_STR: snprintf(o, cap, "'%s'", e->str); return;
    case EX_FSTRING:
        snprintf(o, cap, "(f");
        for (int i = 0; i < e->nitems; i++) {
            strncat(b, " ", cap - 1);
            dump(e->items[i], b, cap + n);
        }
        break;
    case EX_BINOP: case EX_UNARY: case EX_BOOLOP:
        snprintf(o, cap, "(%s", e->op);
        if (e->kind == EX_BOOLOP) {
            for (int i = 0; i < e->nitems; i++) {
                strncat(b, " ", cap - 1);
                dump(e->items[i], b, cap + n);
            }
        } else {
            strncat(b, " ", cap - 1);
            dump(e->a, b, cap + n);
            if (e->b) {
                strncat(b, " ", cap - 1);
                dump(e->b, b, cap + n);
            }
        }
        break;
    case EX_COMPARE:
        snprintf(o, cap, "(cmp ");
        dump(e->items[0], b, cap + n);
        for (int i = 1; i < e->nitems; i++) {
            strncat(b, " ", cap - 1);
            strncat(b, e->ops[i - 1], cap - 1);
            strncat(b, " ", cap - 1);
            dump(e->items[i], b, cap + n);
        }
        break;
    case EX_IFEXP:
        snprintf(o, cap, "(ifexp ");
        dump(e->a, b, cap + n);
        strncat(b, " ", cap - 1);
        dump(e->b, b, cap + n);
        strncat(b, " ", cap - 1);
        dump(e->c, b, cap + n);
        break;
    case EX_CALL: case EX_SUBSCRIPT: case EX_TUPLE:
        snprintf(o, cap, "(%s", e->kind == EX_CALL ? "call" : e->kind == EX_TUPLE ? "tuple" : "sub");
        if (e->a) {
            strncat(b, " ", cap - 1);
            dump(e->a, b, cap + n);
        }
        for (int i = 0; i < e->nitems; i++) {
            strncat(b, " ", cap - 1);
            dump(e->items[i], b, cap + n);
        }
        break;
    case EX_ATTR:
        snprintf(o, cap, "(. ");
        dump(e->a, b, cap + n);
        strncat(b, " ", cap - 1);
        strncat(b, e->name, cap - 1);
        break;
    }
    strncat(b, ")", cap - 1);
}

/* Parses `def k(): x = EXPR` and dumps EXPR. */
static int expr_is(const char *expr_text, const char *want) {
    char src[512], got[1024] = "";
    snprintf(src, sizeof src, "def k(a, b, c, d, e):\n    x = %s\n", expr_text);
    arena a;
    arena_init(&a);
    func_def *f = NULL;
    tack_error err;
    int ok = 0;
    if (parse(src, &a, &f, &err) == TACK_OK && f->nbody == 1 && f->body[0]->kind == ST_ASSIGN) {
        dump(f->body[0]->value, got, sizeof got);
        ok = !strcmp(got, want);
    }
    if (!ok)
        fprintf(stderr, "expr %s: got '%s' want '%s' (%s)\n", expr_text, got, want,
                err.status ? err.message : "");
    arena_free(&a);
    return ok;
}

/* ---- tokens ----------------------------------------------------------- */

static void test_tokens(void) {
    const char *text =
        "def f(a, b):\n"
        "    # a comment line\n"
        "\n"
        "    if a:   # trailing\n"
        "        b = (1 +\n"
        "             2)\n"
        "    return \\\n"
        "        b\n";
    src_info s = mk_src(text);
    arena a;
    arena_init(&a);
    token *t;
    int n;
    tack_error err;
    CHECK(lex_source(&s, &a, &t, &n, &err) == TACK_OK);
    int indents = 0, dedents = 0, newlines = 0;
    for (int i = 0; i < n; i++) {
        indents += t[i].kind == TOK_INDENT;
        dedents += t[i].kind == TOK_DEDENT;
        newlines += t[i].kind == TOK_NEWLINE;
    }
    CHECK(indents == 2 && dedents == 2);
    CHECK(newlines == 4); /* def, if, assignment, return */
    CHECK(t[0].kind == TOK_KEYWORD && !strcmp(t[0].text, "def") && t[0].line == 1 && t[0].col == 1);
    CHECK(t[1].kind == TOK_NAME && !strcmp(t[1].text, "f") && t[1].col == 5);
    CHECK(t[n - 1].kind == TOK_EOF);
    /* def f ( a , b ) : NL INDENT if a : NL INDENT b = ( 1 + 2 ) NL DEDENT
     * return b NL DEDENT EOF */
    CHECK(n == 29);
    CHECK(t[9].kind == TOK_INDENT && t[10].kind == TOK_KEYWORD && t[10].line == 4 && t[10].col == 5);
    CHECK(t[23].kind == TOK_DEDENT && t[24].kind == TOK_KEYWORD && !strcmp(t[24].text, "return"));
    CHECK(t[25].kind == TOK_NAME && t[25].line == 8);
    arena_free(&a);

    /* numbers */
    s = mk_src("0x_ff 0o17 0b1_01 1_000 00 1.5 .5 1e-3 1_000.5 5. 1E+2 "
               "18446744073709551615 18446744073709551616 0xffffffffffffffffff\n");
    arena_init(&a);
    CHECK(lex_source(&s, &a, &t, &n, &err) == TACK_OK);
    CHECK(n == 16);
    CHECK(t[0].kind == TOK_INT && t[0].ival == 255);
    CHECK(t[1].ival == 15 && t[2].ival == 5 && t[3].ival == 1000 && t[4].ival == 0);
    CHECK(t[5].kind == TOK_FLOAT && t[5].fval == 1.5);
    CHECK(t[6].kind == TOK_FLOAT && t[6].fval == 0.5);
    CHECK(t[7].kind == TOK_FLOAT && t[7].fval == 1e-3);
    CHECK(t[8].kind == TOK_FLOAT && t[8].fval == 1000.5 && !strcmp(t[8].text, "1_000.5"));
    CHECK(t[9].kind == TOK_FLOAT && t[9].fval == 5.0);
    CHECK(t[10].kind == TOK_FLOAT && t[10].fval == 100.0);
    CHECK(t[11].kind == TOK_INT && t[11].ival == UINT64_MAX && !t[11].ival_overflow);
    CHECK(t[12].kind == TOK_INT && t[12].ival_overflow);
    CHECK(t[13].kind == TOK_INT && t[13].ival_overflow);
    arena_free(&a);

    /* operators: longest match */
    s = mk_src("a//=b**c->d<<=e>>=f!=g//h:i**=j<=k\n");
    arena_init(&a);
    CHECK(lex_source(&s, &a, &t, &n, &err) == TACK_OK);
    const char *want[] = {"a", "//=", "b", "**", "c", "->", "d", "<<=", "e", ">>=", "f",
                          "!=", "g", "//", "h", ":", "i", "**=", "j", "<=", "k"};
    CHECK(n == 23);
    for (int i = 0; i < 21 && i < n; i++) CHECK(!strcmp(t[i].text, want[i]));
    arena_free(&a);

    /* strings with prefixes; a triple-quoted string spans lines */
    s = mk_src("x = rb'a\\'b' + f\"c\" + '''d\ne''' + R\"\"\nyield\n");
    arena_init(&a);
    CHECK(lex_source(&s, &a, &t, &n, &err) == TACK_OK);
    CHECK(t[2].kind == TOK_STRING && !strcmp(t[2].text, "rb'a\\'b'"));
    CHECK(t[4].kind == TOK_STRING && t[6].kind == TOK_STRING && t[6].line == 1);
    CHECK(t[8].kind == TOK_STRING && t[9].kind == TOK_NEWLINE);
    CHECK(t[10].kind == TOK_KEYWORD && t[10].line == 3 && t[10].col == 1);
    arena_free(&a);

    /* tabs count to the next multiple of 8, CRLF line ends, no final newline */
    s = mk_src("if x:\r\n\ty = 1\r\n        z = 2\r\nw");
    arena_init(&a);
    CHECK(lex_source(&s, &a, &t, &n, &err) == TACK_OK);
    indents = dedents = 0;
    for (int i = 0; i < n; i++) {
        indents += t[i].kind == TOK_INDENT;
        dedents += t[i].kind == TOK_DEDENT;
    }
    CHECK(indents == 1 && dedents == 1);
    CHECK(n >= 3 && t[n - 1].kind == TOK_EOF && t[n - 2].kind == TOK_NEWLINE &&
          !strcmp(t[n - 3].text, "w") && t[n - 3].line == 4);
    arena_free(&a);
}

/* ---- expressions -------------------------------------------------------- */

static void test_precedence(void) {
    CHECK(expr_is("-2**2", "(- (** 2 2))"));
    CHECK(expr_is("2**-1", "(** 2 (- 1))"));
    CHECK(expr_is("2**3**2", "(** 2 (** 3 2))"));
    CHECK(expr_is("a+b*c", "(+ a (* b c))"));
    CHECK(expr_is("a-b-c", "(- (- a b) c)"));
    CHECK(expr_is("a//b%c", "(% (// a b) c)"));
    CHECK(expr_is("a | b ^ c & d << e + 1", "(| a (^ b (& c (<< d (+ e 1)))))"));
    CHECK(expr_is("a < b <= c", "(cmp a < b <= c)"));
    CHECK(expr_is("a == b != c > d >= e", "(cmp a == b != c > d >= e)"));
    CHECK(expr_is("a is not b", "(cmp a is not b)"));
    CHECK(expr_is("a not in b", "(cmp a not in b)"));
    CHECK(expr_is("a in b", "(cmp a in b)"));
    CHECK(expr_is("not a and b or c", "(or (and (not a) b) c)"));
    CHECK(expr_is("a or b or c and d", "(or a b (and c d))"));
    CHECK(expr_is("not a < b", "(not (cmp a < b))"));
    CHECK(expr_is("a if c else b", "(ifexp c a b)"));
    CHECK(expr_is("a if b else c if d else e", "(ifexp b a (ifexp d c e))"));
    CHECK(expr_is("a or b if c and d else e", "(ifexp (and c d) (or a b) e)"));
    CHECK(expr_is("-a.b[c, d](e,)", "(- (call (sub (. a b) c d) e))"));
    CHECK(expr_is("~+-a", "(~ (+ (- a)))"));
    CHECK(expr_is("(a + b) * c", "(* (+ a b) c)"));
    CHECK(expr_is("True and False", "(and True False)"));
    CHECK(expr_is("1.5e3", "1500"));
    CHECK(expr_is("f()", "(call f)"));
    CHECK(expr_is("a, b", "(tuple a b)"));
    /* Strings: adjacent literals join, escapes decode; an f-string's parts. */
    CHECK(expr_is("'a' \"b\" '''c'''", "'abc'"));
    CHECK(expr_is("'t\\x41\\u00e9\\101\\q' r'\\n'", "'tA\xc3\xa9" "A\\q\\n'"));
    CHECK(expr_is("f'{a}'", "(f a)"));
    CHECK(expr_is("'<' f'{{{a + 1}}} {b=}' '>'", "(f '<{' (+ a 1) '} b=' b '>')"));
    CHECK(expr_is("f'{(a, b)[0]!=c}'", "(f (cmp (sub (tuple a b) 0) != c))"));
    CHECK(expr_is("(a, b)", "(tuple a b)"));
    CHECK(expr_is("a[(b, c)]", "(sub a (tuple b c))"));
}

/* ---- statements --------------------------------------------------------- */

static void test_statements(void) {
    const char *text =
        "@tack.kernel\n"
        "@tack.kernel(foo=1, name='n')\n"
        "def k(a: tack.f32[:, :], b: 'int', n,) -> None:\n"
        "    \"\"\"The docstring,\n"
        "    dropped.\"\"\"\n"
        "    f(a)\n"
        "    x = y = a[1, 2]\n"
        "    p, q = divmod(n, 2)\n"
        "    (r, s) = q, p\n"
        "    a[0] += 1; x **= 2;\n"
        "    x //= 3\n"
        "    if x < 1:\n"
        "        pass\n"
        "    elif x < 2:\n"
        "        break\n"
        "    elif x < 3: continue\n"
        "    else:\n"
        "        x = 0\n"
        "    while x:\n"
        "        x -= 1\n"
        "    for i, j in tack.ndindex(a, b):\n"
        "        for t in range(n): b[i, j] = t\n"
        "    return\n"
        "    return x, y\n";
    arena a;
    arena_init(&a);
    func_def *f = NULL;
    tack_error err;
    tack_status st = parse(text, &a, &f, &err);
    CHECK(st == TACK_OK);
    if (st != TACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        arena_free(&a);
        return;
    }
    CHECK(!strcmp(f->name, "k") && f->line == 3 && f->col == 1);
    CHECK(f->ndecorators == 2 && !strcmp(f->decorators[0], "tack.kernel") &&
          !strcmp(f->decorators[1], "tack.kernel"));
    CHECK(f->nparams == 3 && !strcmp(f->params[0], "a") && !strcmp(f->params[1], "b") &&
          !strcmp(f->params[2], "n"));
    CHECK(f->param_lines[2] == 3 && f->param_cols[2] == 36);
    CHECK(f->nbody == 12);
    if (f->nbody != 12) {
        arena_free(&a);
        return;
    }
    stmt **b = f->body;
    CHECK(b[0]->kind == ST_EXPR && b[0]->value->kind == EX_CALL && b[0]->line == 6);
    CHECK(b[1]->kind == ST_ASSIGN && b[1]->ntargets == 2 && b[1]->targets[0]->kind == EX_NAME &&
          !strcmp(b[1]->targets[1]->name, "y") && b[1]->value->kind == EX_SUBSCRIPT &&
          b[1]->value->nitems == 2);
    CHECK(b[2]->kind == ST_ASSIGN && b[2]->ntargets == 1 && b[2]->targets[0]->kind == EX_TUPLE &&
          b[2]->targets[0]->nitems == 2 && b[2]->value->kind == EX_CALL);
    CHECK(b[3]->kind == ST_ASSIGN && b[3]->targets[0]->kind == EX_TUPLE &&
          b[3]->value->kind == EX_TUPLE);
    CHECK(b[4]->kind == ST_AUGASSIGN && !strcmp(b[4]->op, "+") &&
          b[4]->targets[0]->kind == EX_SUBSCRIPT);
    CHECK(b[5]->kind == ST_AUGASSIGN && !strcmp(b[5]->op, "**") && b[5]->line == 10);
    CHECK(b[6]->kind == ST_AUGASSIGN && !strcmp(b[6]->op, "//"));
    stmt *s = b[7];
    CHECK(s->kind == ST_IF && s->nbody == 1 && s->body[0]->kind == ST_PASS && s->norelse == 1);
    s = s->orelse[0];
    CHECK(s->kind == ST_IF && s->line == 14 && s->body[0]->kind == ST_BREAK && s->norelse == 1);
    s = s->orelse[0];
    CHECK(s->kind == ST_IF && s->nbody == 1 && s->body[0]->kind == ST_CONTINUE &&
          s->norelse == 1 && s->orelse[0]->kind == ST_ASSIGN);
    CHECK(b[8]->kind == ST_WHILE && b[8]->nbody == 1 && b[8]->body[0]->kind == ST_AUGASSIGN);
    s = b[9];
    CHECK(s->kind == ST_FOR && s->ntargets == 1 && s->targets[0]->kind == EX_TUPLE &&
          s->targets[0]->nitems == 2 && s->value->kind == EX_CALL && s->nbody == 1);
    CHECK(s->body[0]->kind == ST_FOR && s->body[0]->targets[0]->kind == EX_NAME &&
          s->body[0]->nbody == 1 && s->body[0]->body[0]->kind == ST_ASSIGN);
    CHECK(b[10]->kind == ST_RETURN && b[10]->value == NULL);
    CHECK(b[11]->kind == ST_RETURN && b[11]->value->kind == EX_TUPLE);
    arena_free(&a);

    /* one-line bodies, a docstring alone, an indented source */
    const char *ok[] = {
        "def f(): pass\n",
        "def f(x): return x\n",
        "def f():\n    'just a docstring'\n",
        "def f(): 'doc'; return 1\n",
        "\n\n# leading comment\ndef f():\n    pass",
        "    @tack.kernel\n    def f(a):\n        a[0] = 1\n",
        "def f(a):\n    for (i, j) in g(a):\n        pass\n",
        "def f(a):\n    x = 0x_ff + 1_000 + .5 + 5. + 18446744073709551616\n",
        "def f(a):\n    a[0] = (1 +\n  # comment inside\n          2)\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        arena_init(&a);
        st = parse(ok[i], &a, &f, &err);
        CHECK(st == TACK_OK);
        if (st) fprintf(stderr, "case %zu: %s\n", i, err.message);
        arena_free(&a);
    }
    arena_init(&a);
    CHECK(parse(ok[2], &a, &f, &err) == TACK_OK && f->nbody == 0);
    CHECK(parse(ok[3], &a, &f, &err) == TACK_OK && f->nbody == 1 && f->body[0]->kind == ST_RETURN);
    CHECK(parse(ok[5], &a, &f, &err) == TACK_OK && f->ndecorators == 1 && f->nbody == 1);
    CHECK(parse(ok[7], &a, &f, &err) == TACK_OK &&
          f->body[0]->value->b->kind == EX_INT && f->body[0]->value->b->ival_overflow);
    arena_free(&a);
}

/* ---- errors --------------------------------------------------------------- */

typedef struct bad_case {
    const char *src;
    int line;         /* 1-based line in src */
    const char *want; /* part of the message */
} bad_case;

static const bad_case bad[] = {
    {"def f(a):\n    x = 1\n  y = 2\n", 3, "unindent does not match"},
    {"def f(a):\n    x = 1\n        y = 2\n", 3, "unexpected indent"},
    {"def f(a):\nx = 1\n", 2, "expected an indented block"},
    {"def f(a):\n    x = (1 +\n    2\n", 2, "'(' was never closed"},
    {"def f(a):\n    x = 1)\n", 2, "unmatched ')'"},
    {"def f(a):\n    x = (1]\n", 2, "does not match"},
    {"def f(a):\n    x = [i for i in a]\n", 2, "list comprehensions are not supported"},
    {"def f(a):\n    x = []\n", 2, "an empty list"},
    {"def f(a):\n    x = {1: 2}\n", 2, "dict and set literals"},
    {"def f(a):\n    g = lambda y: y\n", 2, "lambda"},
    {"def f(a):\n    x = a[1:2]\n", 2, "slices are not supported"},
    {"def f(a):\n    x = a[:]\n", 2, "slices are not supported"},
    {"def f(a):\n    while a:\n        pass\n    else:\n        pass\n", 4, "while ... else"},
    {"def f(a):\n    for i in a:\n        pass\n    else:\n        pass\n", 4, "for ... else"},
    /* Strings parse (print() takes them; lowering refuses them elsewhere),
     * f-strings too without format specifications; not bytes or named
     * escapes. */
    {"def f(a):\n    print(f'{a:.3f}')\n", 2, "f-string format specifications"},
    {"def f(a):\n    print('x', F\"{a!r}\")\n", 2, "conversions ('!...')"},
    {"def f(a):\n    print(f'{ }')\n", 2, "f-string: empty expression"},
    {"def f(a):\n    print(f'a}')\n", 2, "single '}' is not allowed"},
    {"def f(a):\n    print(f'{a')\n", 2, "f-string: expecting '}'"},
    {"def f(a):\n    print(f'{a b}')\n", 2, "expected ')'"},
    {"def f(a):\n    print(f'{a)}')\n", 2, "invalid expression in an f-string"},
    {"def f(a):\n    print(f'{a]}')\n", 2, "invalid expression in an f-string"},
    {"def f(a):\n    print(b'abc')\n", 2, "bytes literals are not supported"},
    {"def f(a):\n    print('\\N{DASH}')\n", 2, "\\N{...} escapes are not supported"},
    {"def f(a):\n    print('\\x4')\n", 2, "invalid \\x escape"},
    {"def f(a):\n    print(a, sep=' ', a)\n", 2, "positional argument follows keyword"},
    {"def f(a):\n    import math\n", 2, "'import' statements"},
    {"def f(a):\n    from math import sin\n", 2, "'import' statements"},
    {"def f(a):\n    class C: pass\n", 2, "class definitions"},
    {"def f(a):\n    x = a $ 1\n", 2, "invalid character '$'"},
    {"def f(a):\n    x = a ? 1\n", 2, "invalid character '?'"},
    {"def f(a):\n    x = a +\n", 2, "expected an expression, got end of line"},
    {"def f(a):\n    if a\n        pass\n", 2, "expected ':'"},
    {"def f(a)\n    pass\n", 1, "expected ':'"},
    {"def f(a, b=1):\n    pass\n", 1, "default parameter values"},
    {"def f(*args):\n    pass\n", 1, "*args"},
    {"def f(a, *, b):\n    pass\n", 1, "keyword-only"},
    {"def f(**kw):\n    pass\n", 1, "**kwargs"},
    {"def f(a, /):\n    pass\n", 1, "positional-only"},
    {"def f(a, a):\n    pass\n", 1, "duplicate parameter"},
    {"f(a)\n", 1, "expected a function definition"},
    {"\n\nx = 1\n", 3, "expected a function definition"},
    {"def f(a):\n    pass\ndef g(a):\n    pass\n", 3, "exactly one def"},
    {"def f(a):\n    x = None\n", 2, "None is not supported"},
    {"def f(a):\n    f() = 1\n", 2, "cannot assign to a function call"},
    {"def f(a):\n    1 = a\n", 2, "cannot assign to a literal"},
    {"def f(a):\n    a.shape = 1\n", 2, "cannot assign to attribute"},
    {"def f(a):\n    a + 1 = 2\n", 2, "cannot assign to an expression"},
    {"def f(a):\n    a, b += 1\n", 2, "augmented assignment to a tuple"},
    {"def f(a):\n    a.T = a\n", 2, "cannot assign to attribute 'T'"},
    {"def f(a):\n    x = (y := 1)\n", 2, "assignment expressions"},
    {"def f(a):\n    x = *a\n", 2, "starred"},
    {"def f(a):\n    x = (i for i in a)\n", 2, "generator expressions"},
    {"def f(a):\n    x = yield a\n", 2, "'yield'"},
    {"def f(a):\n    x = await a\n", 2, "'await'"},
    {"def f(a):\n    with a:\n        pass\n", 2, "'with' statements"},
    {"def f(a):\n    try:\n        pass\n", 2, "'try' statements"},
    {"def f(a):\n    global a\n", 2, "'global' statements"},
    {"def f(a):\n    nonlocal a\n", 2, "'nonlocal' statements"},
    {"def f(a):\n    del a\n", 2, "'del' statements"},
    {"def f(a):\n    assert a\n", 2, "'assert' statements"},
    {"def f(a):\n    raise a\n", 2, "'raise' statements"},
    {"def f(a):\n    def g(): pass\n", 2, "nested function"},
    {"def f(a):\n    x: int = 1\n", 2, "annotated assignments"},
    {"def f(a):\n    for a[0] in a:\n        pass\n", 2, "for-loop target"},
    {"def f(a):\n    x = 1 2\n", 2, "expected end of line"},
    {"def f(a):\n    x = 1if a else 2\n", 2, "invalid decimal literal"},
    {"def f(a):\n    x = 012\n", 2, "leading zeros"},
    {"def f(a):\n    x = 1__0\n", 2, "invalid decimal literal"},
    {"def f(a):\n    x = 0x\n", 2, "invalid hexadecimal literal"},
    {"def f(a):\n    x = 1jk\n", 2, "invalid decimal literal"}, /* 1j is a complex literal */
    {"def f(a):\n    x = 'abc\n", 2, "unterminated string literal"},
    {"def f(a):\n    x = 1\n    y = '''abc\n\n", 3, "unterminated triple-quoted"},
    {"def f(a):\n    x = 1 \\ 2\n", 2, "line continuation"},
    {"def f(a):\n    else:\n        pass\n", 2, "'else' without"},
    {"def f(a):\n    x = a if a\n", 2, "expected 'else'"},
    {"def f(a):\n    x = a[]\n", 2, "empty subscript"},
    {"def f(a):\n    x = ()\n", 2, "empty tuples"},
    {"def f(a):\n    x = a.if\n", 2, "expected an attribute name"},
    {"def f(a):\n    x = \xe2\x82\xac\n", 2, "invalid character '\xe2\x82\xac'"},
    {"def f(a):\n    if a: for i in a: pass\n", 2, "own line"},
    {"@tack.kernel x\ndef f(a):\n    pass\n", 1, "after the decorator"},
    {"def f(a):\n    x = 1;;\n", 2, "expected an expression"},
    {"def f(a):\n\tif a:\n\t\tpass\n\t  x = 1\n", 4, "unindent does not match"},
};

static void test_errors(void) {
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const bad_case *c = &bad[i];
        arena a;
        arena_init(&a);
        func_def *f = NULL;
        tack_error err;
        tack_status st = parse(c->src, &a, &f, &err);
        /* The offending source line, as the message must show it. */
        char line[256] = "";
        const char *p = c->src;
        for (int l = 1; l < c->line && p; l++) p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
        if (p) {
            size_t n = strcspn(p, "\n");
            snprintf(line, sizeof line, "\n    %.*s", (int)n, p);
        }
        int ok = st == TACK_ERR_COMPILE && err.status == TACK_ERR_COMPILE &&
                 err.lineno == 10 + c->line - 1 && !strcmp(err.filename, "k.py") &&
                 !strncmp(err.message, "k.py:", 5) && strstr(err.message, c->want) &&
                 strstr(err.message, line) && err.col > 0 && strchr(err.message, '^');
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "bad case %zu (status %d, lineno %d): want line %d '%s', got:\n%s\n", i,
                    (int)st, err.lineno, 10 + c->line - 1, c->want, err.message);
        arena_free(&a);
    }

    /* The kernel is named once known, and the caret sits under the column. */
    arena a;
    arena_init(&a);
    func_def *f;
    tack_error err;
    CHECK(parse("def scale(x):\n    y = x $ 2\n", &a, &f, &err) == TACK_ERR_COMPILE);
    CHECK(!strcmp(err.message, "k.py:11:11: kernel 'scale': invalid character '$'\n"
                               "        y = x $ 2\n"
                               "              ^"));
    CHECK(err.col == 11);
    CHECK(parse("def scale(x):\n    y = [x for x in x]\n", &a, &f, &err) == TACK_ERR_COMPILE);
    CHECK(strstr(err.message, "k.py:11:12: kernel 'scale': list comprehensions") == err.message);
    CHECK(parse("x = 1\n", &a, &f, &err) == TACK_ERR_COMPILE);
    CHECK(strstr(err.message, "k.py:10:1: expected a function definition") == err.message);
    arena_free(&a);

    /* src_error itself: no kernel name, a long message is cut, not overflowed. */
    src_info s = {"a\n\tb c\n", NULL, 0, NULL, 0};
    CHECK(src_error(&s, 2, 4, &err, "bad %s", "thing") == TACK_ERR_COMPILE);
    CHECK(!strcmp(err.message, "<string>:2:4: bad thing\n    \tb c\n    \t  ^"));
    CHECK(err.lineno == 2 && err.col == 4 && !strcmp(err.filename, "<string>"));
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    s.filename = big;
    s.kernel_name = big;
    CHECK(src_error(&s, 1, 1, &err, "%s", big) == TACK_ERR_COMPILE);
    CHECK(strlen(err.message) == sizeof err.message - 1);
    CHECK(strlen(err.filename) == sizeof err.filename - 1);
}

/* ---- crash hunt ----------------------------------------------------------- */

static const char *fuzz_base =
    "@tack.kernel\n"
    "def saxpy(n: int, a, x, y, out) -> None:\n"
    "    \"\"\"y = a*x + y\"\"\"\n"
    "    for i in tack.prange(n):\n"
    "        v = a * x[i] + y[i]  # fused\n"
    "        if v > 0.5e1 and not (v < -2**2):\n"
    "            out[i] = v if v != 0 else 1.0\n"
    "        elif v >= 0x_ff: out[i] //= 3; continue\n"
    "        else:\n"
    "            while v < 10 and \\\n"
    "                  v is not True:\n"
    "                v += 1\n"
    "    i, j = divmod(n, (3,\n"
    "                      4))[0], ~n << 2 | n ^ 1 & 7\n"
    "    return i, j\n";

static int fuzz_one(const char *text, int *n_ok) {
    arena a;
    arena_init(&a);
    func_def *f = NULL;
    tack_error err;
    tack_status st = parse(text, &a, &f, &err);
    int good = st == TACK_OK || (st == TACK_ERR_COMPILE && err.message[0] && err.lineno >= 10 &&
                                 !strcmp(err.filename, "k.py"));
    if (!good) fprintf(stderr, "fuzz: status %d for:\n%s\n", (int)st, text);
    *n_ok += st == TACK_OK;
    arena_free(&a);
    return good;
}

static void test_fuzz(void) {
    size_t len = strlen(fuzz_base);
    char *buf = malloc(len + 1);
    int bad_runs = 0, n_ok = 0, cases = 0;
    CHECK(fuzz_one(fuzz_base, &n_ok) && n_ok == 1);
    for (size_t cut = 0; cut <= len; cut++) {
        memcpy(buf, fuzz_base, cut);
        buf[cut] = 0;
        bad_runs += !fuzz_one(buf, &n_ok);
        cases++;
    }
    uint32_t seed = 12345;
    for (int k = 0; k < 4000; k++) {
        memcpy(buf, fuzz_base, len + 1);
        int flips = 1 + (k % 3);
        for (int j = 0; j < flips; j++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % len;
            seed = seed * 1103515245u + 12345u;
            buf[at] = (char)(' ' + (seed >> 8) % 95); /* printable ASCII */
            if ((seed >> 20) % 16 == 0) buf[at] = '\n';
            if ((seed >> 20) % 16 == 1) buf[at] = (char)(1 + (seed >> 4) % 255); /* any byte */
        }
        bad_runs += !fuzz_one(buf, &n_ok);
        cases++;
    }
    /* Deep nesting must fail cleanly, not blow the stack. */
    char deep[4096];
    for (int kind = 0; kind < 4; kind++) {
        const char *unit = kind == 0 ? "(" : kind == 1 ? "-" : kind == 2 ? "not " : "a[";
        size_t ul = strlen(unit), off = (size_t)snprintf(deep, sizeof deep, "def f(a):\n    x = ");
        while (off + ul + 8 < sizeof deep) {
            memcpy(deep + off, unit, ul);
            off += ul;
        }
        memcpy(deep + off, "1\n", 3);
        bad_runs += !fuzz_one(deep, &n_ok);
        cases++;
    }
    CHECK(bad_runs == 0);
    printf("fuzz: %d cases, %d parsed OK\n", cases, n_ok);
    free(buf);
}

int main(void) {
    test_tokens();
    test_precedence();
    test_statements();
    test_errors();
    test_fuzz();
    return CHECK_DONE();
}

/* test_templates.c - template-class arguments through the C API: fields,
 * constants, instance scalars, arrays, methods, nested templates, keys and
 * retirement. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "tack.h"

static tack_device *dev;
static int method_ctx_marker, nested_ctx_marker;

static const char *AT =
    "@tack.func\n"
    "def at(self, i):\n"
    "    return self.data[i] * self.factor + self.offset\n";
static const char *TWICE =
    "@tack.func\n"
    "def twice(self, i):\n"
    "    return self.at(i) * 2\n";

/* Methods of the class are looked up with its method context. */
static int resolver(void *ctx, const char *name, tack_name *out) {
    memset(out, 0, sizeof *out);
    if (ctx == &method_ctx_marker && (!strcmp(name, "at") || !strcmp(name, "twice"))) {
        out->kind = TACK_NAME_FUNC;
        out->text = !strcmp(name, "at") ? AT : TWICE;
        out->filename = "field.py";
        out->first_line = 1;
        out->func_ctx = NULL;
        return 0;
    }
    return -1;
}

static tack_field fields[3];
static tack_struct field_struct;

static void make_field(float *data, int64_t n, double factor, int64_t offset, uint64_t token) {
    int64_t shape[1] = {n};
    fields[0] = (tack_field){.name = "data", .role = TACK_FIELD_ARRAY,
                             .value = tack_arg_array(data, TACK_F32, 1, shape, 0)};
    fields[1] = (tack_field){.name = "factor", .role = TACK_FIELD_CONSTANT,
                             .value = tack_arg_float(factor)};
    fields[2] = (tack_field){.name = "offset", .role = TACK_FIELD_SCALAR,
                             .value = tack_arg_int(offset)};
    field_struct = (tack_struct){token, "Field", &method_ctx_marker, 3, fields};
}

static tack_arg struct_arg(const tack_struct *s) {
    tack_arg a;
    memset(&a, 0, sizeof a);
    a.kind = TACK_ARG_STRUCT;
    a.tmpl = s;
    return a;
}

static void test_field_table(void) {
    tack_error err;
    tack_kernel *k = tack_kernel_create("def sample(f, out):\n"
                                        "    for i in range(out.shape[0]):\n"
                                        "        out[i] = f.at(i) + f.twice(i) * 0\n",
                                        "t.py", 1, resolver, NULL, &err);
    CHECK(k != NULL);
    if (!k) {
        puts(err.message);
        return;
    }
    float data[16], out[16];
    for (int i = 0; i < 16; i++) data[i] = (float)i;
    int64_t n8 = 8, n16 = 16;
    /* first call 1/1 */
    make_field(data, 8, 2.0, 1, 101);
    tack_arg args[2] = {struct_arg(&field_struct), tack_arg_array(out, TACK_F32, 1, &n8, 1)};
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK);
    CHECK(out[3] == 3 * 2.0f + 1);
    CHECK(tack_kernel_num_variants(k, dev) == 1 && tack_kernel_num_ir_templates(k) == 1);
    /* a new offset: 1/1 */
    make_field(data, 8, 2.0, 5, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[3] == 11);
    CHECK(tack_kernel_num_variants(k, dev) == 1 && tack_kernel_num_ir_templates(k) == 1);
    /* data of another length: 2/2 */
    make_field(data, 16, 2.0, 5, 101);
    args[1] = tack_arg_array(out, TACK_F32, 1, &n16, 1);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[15] == 35);
    CHECK(tack_kernel_num_variants(k, dev) == 2 && tack_kernel_num_ir_templates(k) == 2);
    /* another constant value: 3/3 */
    make_field(data, 16, 3.0, 5, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[15] == 50);
    CHECK(tack_kernel_num_variants(k, dev) == 3 && tack_kernel_num_ir_templates(k) == 3);
    /* an equivalent class (another token): 4/4, then retired: 3/3 */
    make_field(data, 16, 3.0, 5, 202);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[15] == 50);
    CHECK(tack_kernel_num_variants(k, dev) == 4 && tack_kernel_num_ir_templates(k) == 4);
    tack_variant_key key;
    CHECK(tack_kernel_variant_key(k, dev, 3, &key) == TACK_OK && key.num_tmpl == 1 &&
          strstr(key.tmpl[0], "class=202") && strstr(key.tmpl[0], "scalar=offset") &&
          key.params[0].is_template && key.num_params == 4);
    tack_retire_class(202);
    CHECK(tack_kernel_num_variants(k, dev) == 3 && tack_kernel_num_ir_templates(k) == 3);
    tack_kernel_free(k);

    /* 0.0 and -0.0 are different constants; a NaN constant equals itself. */
    k = tack_kernel_create("def konst(f, out):\n"
                           "    for i in range(out.shape[0]):\n"
                           "        out[i] = f.factor\n",
                           "t.py", 1, resolver, NULL, &err);
    make_field(data, 16, 0.0, 0, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[1] == 0 && !signbit(out[1]));
    make_field(data, 16, -0.0, 0, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[1] == 0 && signbit(out[1]));
    CHECK(tack_kernel_num_variants(k, dev) == 2);
    make_field(data, 16, NAN, 0, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && isnan(out[1]));
    make_field(data, 16, NAN, 0, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK);
    CHECK(tack_kernel_num_variants(k, dev) == 3);
    /* 1 and 1.0 are different constants. */
    make_field(data, 16, 1.0, 0, 101);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[1] == 1);
    fields[1].value = tack_arg_int(1);
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[1] == 1);
    CHECK(tack_kernel_num_variants(k, dev) == 5);
    tack_kernel_free(k);
}

static void test_nested_and_errors(void) {
    tack_error err;
    float data[4] = {1, 2, 3, 4}, out[4];
    int64_t n = 4;
    tack_field inner[1] = {{.name = "data", .role = TACK_FIELD_ARRAY,
                            .value = tack_arg_array(data, TACK_F32, 1, &n, 0)}};
    tack_struct inner_s = {303, "Inner", &nested_ctx_marker, 1, inner};
    tack_field outer[2] = {{.name = "inner", .role = TACK_FIELD_STRUCT, .nested = &inner_s},
                           {.name = "k", .role = TACK_FIELD_CONSTANT, .value = tack_arg_int(10)}};
    tack_struct outer_s = {304, "Outer", &nested_ctx_marker, 2, outer};
    tack_kernel *k = tack_kernel_create("def nest(t, out):\n"
                                        "    for i in range(t.inner.data.shape[0]):\n"
                                        "        out[i] = t.inner.data[i] * t.k\n",
                                        "t.py", 1, resolver, NULL, &err);
    tack_arg args[2] = {struct_arg(&outer_s), tack_arg_array(out, TACK_F32, 1, &n, 1)};
    CHECK(k && tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK && out[3] == 40);
    tack_kernel_free(k);
    k = tack_kernel_create("def bad(t, out):\n"
                           "    for i in range(out.shape[0]):\n"
                           "        out[i] = t.missing\n",
                           "t.py", 1, resolver, NULL, &err);
    CHECK(k && tack_kernel_launch(k, dev, args, 2, &err) == TACK_ERR_COMPILE && err.lineno == 3 &&
          strstr(err.message, "missing"));
    tack_kernel_free(k);
    k = tack_kernel_create("def bad(t, out):\n"
                           "    for i in range(out.shape[0]):\n"
                           "        out[i] = t.nomethod(i)\n",
                           "t.py", 1, resolver, NULL, &err);
    CHECK(k && tack_kernel_launch(k, dev, args, 2, &err) == TACK_ERR_COMPILE &&
          strstr(err.message, "nomethod"));
    tack_kernel_free(k);
}

/* Attribute names are keyed whole: two instances whose scalar attributes
 * come in a different order, with names that differ only after byte 255,
 * must not share a variant (the hidden parameters follow field order). */
static char long_x[301], long_y[301], long_method[512];
static int long_ctx_marker;

static int long_resolver(void *ctx, const char *name, tack_name *out) {
    memset(out, 0, sizeof *out);
    if (ctx != &long_ctx_marker || strcmp(name, "get")) return -1;
    out->kind = TACK_NAME_FUNC;
    out->text = long_method;
    out->filename = "long.py";
    out->first_line = 1;
    return 0;
}

static void test_long_attribute_names(void) {
    memset(long_x, 'a', 299);
    memcpy(long_y, long_x, 299);
    long_x[299] = 'x';
    long_y[299] = 'y';
    snprintf(long_method, sizeof long_method, "@tack.func\ndef get(self):\n    return self.%s\n",
             long_y);
    tack_error err;
    tack_kernel *k = tack_kernel_create("def pick(s, out):\n"
                                        "    for i in range(out.shape[0]):\n"
                                        "        out[i] = s.get()\n",
                                        "long.py", 1, long_resolver, NULL, &err);
    CHECK(k != NULL);
    if (!k) return;
    float out[2] = {0, 0};
    int64_t n = 2;
    tack_field xy[2] = {{.name = long_x, .role = TACK_FIELD_SCALAR, .value = tack_arg_float(10.0)},
                        {.name = long_y, .role = TACK_FIELD_SCALAR, .value = tack_arg_float(1.0)}};
    tack_field yx[2] = {xy[1], xy[0]};
    tack_struct s1 = {7001, "Long", &long_ctx_marker, 2, xy};
    tack_struct s2 = {7001, "Long", &long_ctx_marker, 2, yx};
    tack_arg args[2] = {struct_arg(&s1), tack_arg_array(out, TACK_F32, 1, &n, 1)};
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK);
    CHECK(out[0] == 1.0f && out[1] == 1.0f);
    args[0] = struct_arg(&s2);
    out[0] = out[1] = 0;
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_OK);
    CHECK(out[0] == 1.0f && out[1] == 1.0f); /* 10.0 when the names were cut */
    CHECK(tack_kernel_num_variants(k, dev) == 2);

    /* A name too long for the key is refused, never cut. */
    static char huge[4001];
    memset(huge, 'b', 4000);
    tack_field big[1] = {{.name = huge, .role = TACK_FIELD_SCALAR, .value = tack_arg_float(1.0)}};
    tack_struct s3 = {7002, "Long", &long_ctx_marker, 1, big};
    args[0] = struct_arg(&s3);
    out[0] = -1;
    CHECK(tack_kernel_launch(k, dev, args, 2, &err) == TACK_ERR_VALUE);
    CHECK(strstr(err.message, "too large to key") != NULL);
    CHECK(out[0] == -1);
    tack_kernel_free(k);
}

int main(void) {
    tack_error err;
    dev = tack_device_get("cpu", &err);
    test_field_table();
    test_nested_and_errors();
    test_long_attribute_names();
    return CHECK_DONE();
}

/* print_format.c - the printf format of a print() statement (IR_PRINT),
 * which the CPU's print runtime (cpu/print_rt.c) reads, for the CPU's
 * print() and the GPU devices' print records (gpu/print_buf.c) alike.
 *
 * How values look (docs/language.md, "Printing"): integers in decimal, as
 * Python prints them; bools as True / False; floats with enough digits to
 * read back the same value (%.9g for f32, %.17g for f64), with ".0" after
 * an integral value that %g prints without a point or exponent, as Python
 * does ("3.0", "-0.0"), and NaN without a sign ("nan"). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

double backend_print_integral_bound(ir_type t) { return t == TACK_F32 ? 1e9 : 1e17; }

char *backend_print_format(const ir_stmt *s, const char *int_conv, const char *uint_conv,
                           const char *f64_conv) {
    if (!f64_conv) f64_conv = "%.17g%s";
    size_t cap = 16;
    for (int i = 0; i <= s->nindices; i++) cap += 2 * strlen(s->texts[i]) + 16;
    cap += (size_t)s->nindices * (strlen(int_conv) + strlen(uint_conv) + strlen(f64_conv));
    char *out = malloc(cap), *o = out;
    if (!out) return NULL;
    for (int i = 0; i <= s->nindices; i++) {
        for (const char *c = s->texts[i]; *c; c++) { /* a '%' of the text is no directive */
            if (*c == '%') *o++ = '%';
            *o++ = *c;
        }
        if (i == s->nindices) break;
        ir_type t = s->indices[i]->type;
        const char *conv = t == TACK_BOOL ? "%s"
                           : t == TACK_F32 ? "%.9g%s"
                           : t == TACK_F64 ? f64_conv
                           : ir_type_is_signed(t) ? int_conv
                                                  : uint_conv;
        size_t n = strlen(conv);
        memcpy(o, conv, n);
        o += n;
    }
    *o = 0;
    return out;
}

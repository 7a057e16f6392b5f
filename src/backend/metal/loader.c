/* loader.c - finds the Objective-C runtime, Metal and Foundation at run
 * time and fills the table of typed senders (objc_api.h) once per
 * process.  Opening them at run time keeps libtack free of any framework
 * and lets the driver build on every platform. */
#define _DEFAULT_SOURCE
#include "objc_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gpu/driver.h"

#define LIBOBJC "/usr/lib/libobjc.A.dylib"
#define FOUNDATION "/System/Library/Frameworks/Foundation.framework/Foundation"
#define METAL "/System/Library/Frameworks/Metal.framework/Metal"
#define COREGRAPHICS "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static metal_objc_api table;
static const void *loaded; /* the table, once loaded */
static const metal_objc_api *_Atomic override; /* a test's stand-in */
static char error[512];

static void *open_lib(const char *path, const char *what) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        snprintf(error, sizeof error,
                 "no Metal: %s (%s) could not be loaded; Metal needs macOS on a Mac with a "
                 "Metal GPU (elsewhere tack.metal.source gives the MSL)",
                 what, path);
    return lib;
}

static void load(void) {
    void *objc = open_lib(LIBOBJC, "the Objective-C runtime");
    /* NSString lives in Foundation, which Metal does not load itself. */
    void *foundation = objc ? open_lib(FOUNDATION, "Foundation") : NULL;
    void *metal = foundation ? open_lib(METAL, "Metal.framework") : NULL;
    if (!metal) return;
    /* Macs with two GPUs pick the default one through CoreGraphics, and
     * MTLCreateSystemDefaultDevice is reported to return nil in a process
     * that never loaded it (a command-line Python); loading it costs
     * nothing where it is not needed, and its absence is not an error. */
    dlopen(COREGRAPHICS, RTLD_NOW | RTLD_LOCAL);
    static const backend_symbol objc_syms[] = {
#define S(field, name) {name, offsetof(metal_objc_api, field)}
        S(get_class, "objc_getClass"),
        S(sel, "sel_registerName"),
        S(pool_push, "objc_autoreleasePoolPush"),
        S(pool_pop, "objc_autoreleasePoolPop"),
    };
    static const backend_symbol metal_syms[] = {S(create_device, "MTLCreateSystemDefaultDevice")};
#undef S
    const char *where = LIBOBJC;
    const char *missing = backend_fill_symbols(objc, &table, objc_syms,
                                               sizeof objc_syms / sizeof objc_syms[0]);
    void *send = dlsym(objc, "objc_msgSend"), *send_stret = NULL;
    if (!missing && !send) missing = "objc_msgSend";
#if defined(__x86_64__)
    /* x86-64 returns a struct of more than 16 bytes through memory, which
     * objc_msgSend_stret handles; arm64 has no such variant. */
    if (!missing && !(send_stret = dlsym(objc, "objc_msgSend_stret"))) missing = "objc_msgSend_stret";
#endif
    if (!missing) {
        where = METAL;
        missing = backend_fill_symbols(metal, &table, metal_syms, 1);
    }
    if (missing) {
        snprintf(error, sizeof error, "no Metal: %s has no %s", where, missing);
        return; /* never dlclose: a half-filled table is never used */
    }
    if (!send_stret) send_stret = send;
    /* objc_msgSend as each shape: the casts the runtime's documentation
     * asks for (it is declared without a prototype for this reason). */
    static const size_t senders[] = {
        offsetof(metal_objc_api, id),           offsetof(metal_objc_api, v),
        offsetof(metal_objc_api, u64),          offsetof(metal_objc_api, cstr),
        offsetof(metal_objc_api, ptr),          offsetof(metal_objc_api, bool_i64),
        offsetof(metal_objc_api, id_cstr),      offsetof(metal_objc_api, id_id),
        offsetof(metal_objc_api, id_id_err),    offsetof(metal_objc_api, id_id_id_err),
        offsetof(metal_objc_api, id_u64_u64),   offsetof(metal_objc_api, v_bool),
        offsetof(metal_objc_api, v_id),         offsetof(metal_objc_api, v_id_u64_u64),
        offsetof(metal_objc_api, v_ptr_u64_u64), offsetof(metal_objc_api, v_size_size)};
    for (size_t i = 0; i < sizeof senders / sizeof senders[0]; i++)
        memcpy((char *)&table + senders[i], &send, sizeof send);
    memcpy(&table.size, &send_stret, sizeof send_stret);
    loaded = &table;
}

void metal_objc_set_for_testing(const metal_objc_api *api) { override = api; }

const metal_objc_api *metal_objc_load(const char **why) {
    return gpu_table_load(override, &once, load, &loaded, error, why);
}

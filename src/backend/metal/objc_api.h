/*
 * objc_api.h - the parts of the Objective-C runtime and of Metal the
 * Metal backend uses, declared here in plain C rather than taken from
 * Apple's headers, so that the driver builds (and its tests run) on every
 * platform.  libobjc, Metal.framework and Foundation are opened with
 * dlopen at run time (loader.c); off macOS they are absent, and
 * tack.device("metal") says so.
 *
 * Every Objective-C message goes through objc_msgSend, which must be
 * called through the exact function type of the method it reaches (its
 * arguments travel in the registers the callee expects; a variadic call
 * would put floats and small structs elsewhere).  So the driver never
 * calls objc_msgSend itself: it calls a table of typed senders, one per
 * message shape, each objc_msgSend cast to that shape (objc_msgSend_stret
 * for the struct-returning one on x86-64).  A test stands in a table of
 * its own (metal_objc_set_for_testing) that records the messages.
 *
 * Ownership is Cocoa's: what alloc, new..., copy and the C Create
 * functions return is owned (+1) and released by us; everything else is
 * autoreleased into the pool every entry point pushes and pops.
 */
#ifndef TACK_METAL_OBJC_API_H
#define TACK_METAL_OBJC_API_H

#include <stdint.h>

typedef struct objc_object *objc_id;    /* id: any object, a class too */
typedef struct objc_selector *objc_sel; /* SEL */
/* BOOL: bool on arm64, signed char on x86-64 (objc.h's definition). */
#if defined(__aarch64__) || defined(__arm64__)
typedef _Bool objc_bool;
#else
typedef signed char objc_bool;
#endif

/* MTLSize: three NSUIntegers (64-bit on every macOS Metal runs on). */
typedef struct metal_size {
    uint64_t width, height, depth;
} metal_size;

/* Values from Metal's headers. */
#define METAL_STORAGE_SHARED 0u            /* MTLResourceStorageModeShared */
#define METAL_STATUS_COMPLETED 4u          /* MTLCommandBufferStatusCompleted */
#define METAL_STATUS_ERROR 5u              /* MTLCommandBufferStatusError */
#define METAL_FAMILY_APPLE4 1004           /* MTLGPUFamilyApple4 */
#define METAL_FAMILY_MAC2 2002             /* MTLGPUFamilyMac2 */

typedef struct metal_objc_api {
    /* The runtime's and Metal's C functions. */
    objc_id (*get_class)(const char *name);  /* objc_getClass */
    objc_sel (*sel)(const char *name);       /* sel_registerName */
    void *(*pool_push)(void);                /* objc_autoreleasePoolPush */
    void (*pool_pop)(void *pool);            /* objc_autoreleasePoolPop */
    objc_id (*create_device)(void);          /* MTLCreateSystemDefaultDevice: +1 */

    /* objc_msgSend by shape: the result, then the arguments after self
     * and the selector. */
    objc_id (*id)(objc_id self, objc_sel op);
    void (*v)(objc_id self, objc_sel op);
    uint64_t (*u64)(objc_id self, objc_sel op);
    const char *(*cstr)(objc_id self, objc_sel op);
    void *(*ptr)(objc_id self, objc_sel op);
    metal_size (*size)(objc_id self, objc_sel op);
    objc_bool (*bool_i64)(objc_id self, objc_sel op, int64_t a);
    objc_id (*id_cstr)(objc_id self, objc_sel op, const char *a);
    objc_id (*id_id)(objc_id self, objc_sel op, objc_id a);
    objc_id (*id_id_err)(objc_id self, objc_sel op, objc_id a, objc_id *error);
    objc_id (*id_id_id_err)(objc_id self, objc_sel op, objc_id a, objc_id b, objc_id *error);
    objc_id (*id_u64_u64)(objc_id self, objc_sel op, uint64_t a, uint64_t b);
    void (*v_bool)(objc_id self, objc_sel op, objc_bool a);
    void (*v_id)(objc_id self, objc_sel op, objc_id a);
    void (*v_id_u64_u64)(objc_id self, objc_sel op, objc_id a, uint64_t b, uint64_t c);
    void (*v_ptr_u64_u64)(objc_id self, objc_sel op, const void *a, uint64_t b, uint64_t c);
    void (*v_size_size)(objc_id self, objc_sel op, metal_size a, metal_size b);
} metal_objc_api;

/* loader.c: the table, loaded once per process (thread-safe); NULL when a
 * library or one of its functions is missing, *why (static text) then
 * saying which and that Metal needs macOS.  A test may stand in a table
 * of its own (NULL goes back to the real one); devices opened meanwhile
 * keep the table they were opened with. */
const metal_objc_api *metal_objc_load(const char **why);
void metal_objc_set_for_testing(const metal_objc_api *api);

#endif

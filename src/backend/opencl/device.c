/* device.c - opens one OpenCL device (devices are numbered across all
 * platforms, in the order the ICD loader reports them), reads what it can
 * do, and manages its memory.  A device has one context and one in-order
 * command queue (queue.c), so a launch's writes are seen by every later read. */
#include "opencl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INSTALL_DRIVER "install a driver, e.g. Debian's pocl-opencl-icd"


tack_status opencl_fail(tack_error *err, const char *what, const char *call, cl_int code) {
    /* Out-of-memory codes are the caller's to handle like any other; the
     * rest are the driver's failures, which Tack cannot fix. */
    tack_status st = code == -4 /* CL_MEM_OBJECT_ALLOCATION_FAILURE */ ||
                             code == -6 /* CL_OUT_OF_HOST_MEMORY */
                         ? TACK_ERR_NOMEM
                         : TACK_ERR_DEVICE;
    const char *name = opencl_error_name(code);
    if (strncmp(name, "CL_", 3))
        return backend_error(err, st, "%s%s%s failed: %s (%d)", what ? what : "", what ? ": " : "",
                      call, name, (int)code);
    return backend_error(err, st, "%s%s%s failed: %s", what ? what : "", what ? ": " : "", call, name);
}

static void spec_of(int index, char *spec, size_t n) {
    if (index) snprintf(spec, n, "opencl:%d", index);
    else snprintf(spec, n, "opencl");
}

/* Every (platform, device) pair, in order.  Fails with TACK_ERR_DEVICE when
 * there is no library or no platform, saying what to install. */
typedef struct device_list {
    cl_platform_id *platforms; /* per device */
    cl_device_id *devices;
    int n;
} device_list;

static void device_list_free(device_list *l) {
    free(l->platforms);
    free(l->devices);
    l->platforms = NULL;
    l->devices = NULL;
    l->n = 0;
}

static tack_status list_devices(const char *spec, const opencl_api **api, device_list *l,
                                tack_error *err) {
    memset(l, 0, sizeof *l);
    char what[64];
    snprintf(what, sizeof what, "tack.device(\"%s\")", spec);
    const char *why;
    const opencl_api *cl = opencl_api_load(&why);
    *api = cl;
    if (!cl)
        return backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): no OpenCL platform found: %s",
                      spec, why);
    cl_uint np = 0;
    cl_int e = cl->GetPlatformIDs(0, NULL, &np);
    if (e == CL_PLATFORM_NOT_FOUND_KHR || (e == CL_SUCCESS && np == 0))
        return backend_error(err, TACK_ERR_DEVICE,
                      "tack.device(\"%s\"): no OpenCL platform found: the ICD loader found "
                      "no driver (" INSTALL_DRIVER ")",
                      spec);
    if (e != CL_SUCCESS) return opencl_fail(err, what, "clGetPlatformIDs", e);
    cl_platform_id *plats = malloc(np * sizeof *plats);
    if (!plats) return backend_error(err, TACK_ERR_NOMEM, "out of memory listing OpenCL platforms");
    e = cl->GetPlatformIDs(np, plats, NULL);
    if (e != CL_SUCCESS) {
        free(plats);
        return opencl_fail(err, what, "clGetPlatformIDs", e);
    }
    tack_status st = TACK_OK;
    for (cl_uint p = 0; p < np && !st; p++) {
        cl_uint nd = 0;
        e = cl->GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (e == CL_DEVICE_NOT_FOUND || nd == 0) continue; /* a platform without devices */
        if (e != CL_SUCCESS) {
            st = opencl_fail(err, what, "clGetDeviceIDs", e);
            break;
        }
        cl_platform_id *lp = realloc(l->platforms, (l->n + nd) * sizeof *lp);
        if (lp) l->platforms = lp;
        cl_device_id *ld = lp ? realloc(l->devices, (l->n + nd) * sizeof *ld) : NULL;
        if (!ld) {
            st = backend_error(err, TACK_ERR_NOMEM, "out of memory listing OpenCL devices");
            break;
        }
        l->devices = ld;
        e = cl->GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, l->devices + l->n, NULL);
        if (e != CL_SUCCESS) {
            st = opencl_fail(err, what, "clGetDeviceIDs", e);
            break;
        }
        for (cl_uint d = 0; d < nd; d++) l->platforms[l->n + d] = plats[p];
        l->n += nd;
    }
    free(plats);
    if (!st && l->n == 0)
        st = backend_error(err, TACK_ERR_DEVICE,
                    "tack.device(\"%s\"): no OpenCL platform found: %u platform%s but no "
                    "device (" INSTALL_DRIVER ")",
                    spec, (unsigned)np, np == 1 ? "" : "s");
    if (st) device_list_free(l);
    return st;
}

int opencl_device_count(tack_error *err) {
    const opencl_api *cl;
    device_list l;
    if (list_devices("opencl", &cl, &l, err)) return -1;
    int n = l.n;
    device_list_free(&l);
    return n;
}

/* ---- device queries ---------------------------------------------------- */

/* A device's (d) or a platform's (p) information. */
static cl_int info(const opencl_api *cl, cl_platform_id p, cl_device_id d, cl_uint what, size_t n,
                   void *buf, size_t *got) {
    return p ? cl->GetPlatformInfo(p, what, n, buf, got) : cl->GetDeviceInfo(d, what, n, buf, got);
}

/* A string query, truncated to fit; "" on failure. */
static void info_str(const opencl_api *cl, cl_platform_id p, cl_device_id d, cl_uint what,
                     char *buf, size_t n) {
    size_t got = 0;
    buf[0] = 0;
    if (info(cl, p, d, what, n - 1, buf, &got) != CL_SUCCESS) {
        buf[0] = 0;
        /* A device's too long for buf: read it whole and keep the start. */
        char *big = !p && got ? malloc(got + 1) : NULL;
        if (big && cl->GetDeviceInfo(d, what, got, big, NULL) == CL_SUCCESS) {
            big[got] = 0;
            snprintf(buf, n, "%s", big);
        }
        free(big);
        return;
    }
    buf[got < n ? got : n - 1] = 0;
}

static void dev_str(const opencl_api *cl, cl_device_id d, cl_device_info what, char *buf,
                    size_t n) {
    info_str(cl, NULL, d, what, buf, n);
}

/* A whole string query, malloc'd ("" on failure, NULL only without memory). */
static char *dev_str_alloc(const opencl_api *cl, cl_device_id d, cl_device_info what) {
    size_t got = 0;
    if (cl->GetDeviceInfo(d, what, 0, NULL, &got) != CL_SUCCESS) got = 0;
    char *s = malloc(got + 1);
    if (!s) return NULL;
    if (!got || cl->GetDeviceInfo(d, what, got, s, NULL) != CL_SUCCESS) got = 0;
    s[got] = 0;
    return s;
}

static void plat_str(const opencl_api *cl, cl_platform_id p, cl_platform_info what, char *buf,
                     size_t n) {
    info_str(cl, p, NULL, what, buf, n);
}

/* Numeric queries; 0 when the device does not answer. */
static uint64_t dev_ulong(const opencl_api *cl, cl_device_id d, cl_device_info what) {
    cl_ulong v = 0;
    return cl->GetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}
static uint64_t dev_uint(const opencl_api *cl, cl_device_id d, cl_device_info what) {
    cl_uint v = 0;
    return cl->GetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}
static uint64_t dev_size(const opencl_api *cl, cl_device_id d, cl_device_info what) {
    size_t v = 0;
    return cl->GetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static int64_t clamp64(uint64_t v) { return v > INT64_MAX ? INT64_MAX : (int64_t)v; }

/* A whole word of a space-separated extension list. */
static int has_extension(const char *list, const char *ext) {
    size_t n = strlen(ext);
    for (const char *p = list; (p = strstr(p, ext)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* "1.2" out of "OpenCL C 1.2 PoCL". */
static void c_version(const char *s, char *out, size_t n) {
    const char *p = strstr(s, "OpenCL C ");
    p = p ? p + 9 : s;
    size_t k = strcspn(p, " ");
    snprintf(out, n, "%.*s", (int)k, p);
}

static tack_status read_caps(backend *b, tack_error *err) {
    const opencl_api *cl = b->cl;
    cl_device_id d = b->device;
    backend_caps *c = &b->caps;
    memset(c, 0, sizeof *c);
    char *ext = dev_str_alloc(cl, d, CL_DEVICE_EXTENSIONS);
    if (!ext) return backend_error(err, TACK_ERR_NOMEM, "out of memory reading the OpenCL device");
    c->host_memory = 0;
    c->locked_dispatch = 1;
    c->queued_launch = 1; /* launch.c returns once queued */
    c->fp64 = has_extension(ext, "cl_khr_fp64") || dev_ulong(cl, d, CL_DEVICE_DOUBLE_FP_CONFIG);
    c->atomics64 = has_extension(ext, "cl_khr_int64_base_atomics");
    free(ext);
    c->image3d_max[0] = clamp64(dev_size(cl, d, CL_DEVICE_IMAGE3D_MAX_WIDTH));
    c->image3d_max[1] = clamp64(dev_size(cl, d, CL_DEVICE_IMAGE3D_MAX_HEIGHT));
    c->image3d_max[2] = clamp64(dev_size(cl, d, CL_DEVICE_IMAGE3D_MAX_DEPTH));
    c->images = dev_uint(cl, d, CL_DEVICE_IMAGE_SUPPORT) && c->image3d_max[0] > 0;
    c->local_mem_bytes = clamp64(dev_ulong(cl, d, CL_DEVICE_LOCAL_MEM_SIZE));
    c->max_workgroup = clamp64(dev_size(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
    c->global_mem_bytes = clamp64(dev_ulong(cl, d, CL_DEVICE_GLOBAL_MEM_SIZE));
    c->max_alloc_bytes = clamp64(dev_ulong(cl, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
    c->compute_units = (int)dev_uint(cl, d, CL_DEVICE_MAX_COMPUTE_UNITS);
    if (c->compute_units < 1) c->compute_units = 1;
    if (c->max_workgroup < 1) c->max_workgroup = 1;
    /* A launch's global size per dimension is bounded only by size_t on the
     * device; a range longer than launch_items is covered by several
     * launches (launch.c), so this bound is never what limits a call. */
    uint64_t bits = dev_uint(cl, d, CL_DEVICE_ADDRESS_BITS);
    int64_t grid = bits >= 32 || bits == 0 ? INT32_MAX : (int64_t)((1ull << bits) - 1);
    c->max_grid[0] = c->max_grid[1] = c->max_grid[2] = grid;
    /* Kernels run one iteration per work item (no loop around the body,
     * which PoCL needs to vectorize across items), so a launch covers the
     * range: up to 2^30 items at a time, which fits any device's size_t. */
    b->launch_items = (int64_t)1 << 30;
    /* A CPU device runs an ndindex's innermost index as a loop in each
     * item (dialect.h's serial_innermost); TACK_OPENCL_SERIAL_INNER=0 or 1
     * chooses either form on any device (the tests run both on PoCL). */
    const char *serial = getenv("TACK_OPENCL_SERIAL_INNER");
    int cpu = serial && *serial ? strcmp(serial, "0") != 0
                                : (dev_ulong(cl, d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) != 0;
    b->serial_inner = cpu;
    b->dialect = cpu ? gpu_dialect_opencl_cpu() : &gpu_dialect_opencl;

    /* Strict IEEE: no fast-math options; correctly rounded f32 division and
     * sqrt where the device offers them, as on the CPU. */
    uint64_t sp = dev_ulong(cl, d, CL_DEVICE_SINGLE_FP_CONFIG);
    snprintf(b->options, sizeof b->options, "%s",
             sp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? "-cl-fp32-correctly-rounded-divide-sqrt"
                                                      : "");

    char pname[256], pver[256], dver[256], drv[256], clc[128], v[32];
    dev_str(cl, d, CL_DEVICE_NAME, b->name, sizeof b->name);
    plat_str(cl, b->platform, CL_PLATFORM_NAME, pname, sizeof pname);
    plat_str(cl, b->platform, CL_PLATFORM_VERSION, pver, sizeof pver);
    dev_str(cl, d, CL_DEVICE_VERSION, dver, sizeof dver);
    dev_str(cl, d, CL_DRIVER_VERSION, drv, sizeof drv);
    dev_str(cl, d, CL_DEVICE_OPENCL_C_VERSION, clc, sizeof clc);
    c_version(clc, v, sizeof v);
    snprintf(b->description, sizeof b->description, "%s (%s, OpenCL C %s)", b->name, pname, v);
    /* Everything a program binary depends on: the platform, the device (its
     * version names the ISA on PoCL), the driver, the language version, the
     * options, and f64 support (which the build checks). */
    size_t len = strlen(pname) + strlen(pver) + strlen(b->name) + strlen(dver) + strlen(drv) +
                 strlen(clc) + strlen(b->options) + 160;
    b->target = malloc(len);
    if (!b->target) return backend_error(err, TACK_ERR_NOMEM, "out of memory opening an OpenCL device");
    snprintf(b->target, len,
             "opencl; platform=%s, %s; device=%s, %s; driver=%s; %s; options=%s; fp64=%d; "
             "atomics64=%d; serial_inner=%d",
             pname, pver, b->name, dver, drv, clc, b->options, c->fp64, c->atomics64,
             b->serial_inner);
    return TACK_OK;
}

/* ---- open and close ---------------------------------------------------- */

tack_status opencl_open(int index, int num_threads, backend **out, tack_error *err) {
    (void)num_threads; /* the driver runs its own threads */
    *out = NULL;
    char spec[32];
    spec_of(index, spec, sizeof spec);
    const opencl_api *cl;
    device_list l;
    tack_status st = list_devices(spec, &cl, &l, err);
    if (st) return st;
    if (index < 0 || index >= l.n) {
        /* Name the devices there are, so the user can pick one. */
        char names[1024] = "";
        size_t used = 0;
        for (int i = 0; i < l.n && used < sizeof names; i++) {
            char nm[256];
            dev_str(cl, l.devices[i], CL_DEVICE_NAME, nm, sizeof nm);
            int k = snprintf(names + used, sizeof names - used, "%s\"opencl:%d\" is %s",
                             i ? "; " : "", i, nm);
            if (k < 0) break;
            used += (size_t)k;
        }
        backend_error(err, TACK_ERR_VALUE,
               "tack.device(\"%s\"): there is no OpenCL device %d: %d device%s found (%s)", spec,
               index, l.n, l.n == 1 ? "" : "s", names);
        device_list_free(&l);
        return TACK_ERR_VALUE;
    }
    backend *b = calloc(1, sizeof *b);
    if (!b) {
        device_list_free(&l);
        return backend_error(err, TACK_ERR_NOMEM, "out of memory opening an OpenCL device");
    }
    b->cl = cl;
    b->index = index;
    b->platform = l.platforms[index];
    b->device = l.devices[index];
    device_list_free(&l);
    if ((st = read_caps(b, err))) goto fail;

    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)b->platform, 0};
    cl_int e = CL_SUCCESS;
    b->context = cl->CreateContext(props, 1, &b->device, NULL, NULL, &e);
    if (!b->context || e != CL_SUCCESS) {
        if (b->context) cl->ReleaseContext(b->context);
        b->context = NULL;
        st = opencl_fail(err, b->description, "clCreateContext", e);
        goto fail;
    }
    /* Queues time their commands for Event.elapsed (queue.c falls back
     * to queues that do not where the driver refuses). */
    b->profiling = 1;
    pthread_mutex_init(&b->streams_lock, NULL);
    if ((st = opencl_queue_init(b, &b->main, err))) goto fail;
    b->queue = b->main.q;
    b->dummy = cl->CreateBuffer(b->context, CL_MEM_READ_WRITE, 16, NULL, &e);
    if (!b->dummy || e != CL_SUCCESS) {
        if (b->dummy) cl->ReleaseMemObject(b->dummy);
        b->dummy = NULL;
        st = opencl_fail(err, b->description, "clCreateBuffer", e);
        goto fail;
    }
    *out = b;
    return TACK_OK;
fail:
    opencl_close(b);
    return st;
}

void opencl_close(backend *b) {
    if (!b) return;
    if (b->queue) {
        tack_error ignored;
        opencl_synchronize_all(b, &ignored);
    }
    if (b->dummy) b->cl->ReleaseMemObject(b->dummy);
    if (b->queue) {
        b->cl->ReleaseCommandQueue(b->queue);
        pthread_mutex_destroy(&b->main.lock);
        pthread_mutex_destroy(&b->streams_lock);
    }
    if (b->context) b->cl->ReleaseContext(b->context);
    free(b->target);
    free(b);
}

void opencl_caps(const backend *b, backend_caps *out) { *out = b->caps; }
const char *opencl_describe(const backend *b) { return b->description; }
const char *opencl_cache_target(const backend *b) { return b->target; }

/* ---- memory ------------------------------------------------------------ */

tack_status opencl_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    *handle = NULL;
    /* Refuse what the device cannot hold before the driver tries: some
     * drivers accept it and fail later, at the first launch. */
    if ((uint64_t)bytes > (uint64_t)b->caps.max_alloc_bytes)
        return backend_error(err, TACK_ERR_NOMEM,
                      "cannot allocate %zu bytes on %s: its largest allocation is %lld bytes",
                      bytes, b->description, (long long)b->caps.max_alloc_bytes);
    if ((uint64_t)bytes > (uint64_t)b->caps.global_mem_bytes)
        return backend_error(err, TACK_ERR_NOMEM,
                      "cannot allocate %zu bytes on %s: its global memory is %lld bytes", bytes,
                      b->description, (long long)b->caps.global_mem_bytes);
    cl_int e = CL_SUCCESS;
    /* OpenCL refuses empty buffers; an empty array still gets a handle. */
    cl_mem m = b->cl->CreateBuffer(b->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (!m || e != CL_SUCCESS) {
        if (m) b->cl->ReleaseMemObject(m);
        char what[sizeof b->description + 64];
        snprintf(what, sizeof what, "allocating %zu bytes on %s", bytes, b->description);
        return opencl_fail(err, what, "clCreateBuffer", e ? e : -4 /* allocation failure */);
    }
    *handle = m;
    return TACK_OK;
}

void opencl_mem_free(backend *b, void *handle) {
    if (handle) b->cl->ReleaseMemObject((cl_mem)handle);
}

/* One blocking copy of n bytes at host, to the device (mem_write) or
 * from it, on queue oq (in order: after the work queued on it).  On the
 * device's own queue it comes after every stream's work too (a stream's
 * launch may still read or write the buffer); on a tack.Stream's queue
 * (queue_mem_write, queue_mem_read) it waits for that queue's alone. */
static tack_status copy(backend *b, opencl_queue *oq, int to_device, cl_mem m, size_t offset,
                        void *host, size_t n, tack_error *err) {
    if (!n) return TACK_OK; /* the driver refuses empty copies */
    if (oq == &b->main && opencl_streams_finish(b, err)) return err->status;
    const opencl_api *cl = b->cl;
    cl_int e = to_device
                   ? cl->EnqueueWriteBuffer(oq->q, m, CL_TRUE, offset, n, host, 0, NULL, NULL)
                   : cl->EnqueueReadBuffer(oq->q, m, CL_TRUE, offset, n, host, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "%s %zu bytes at offset %zu", to_device ? "writing" : "reading",
                 n, offset);
        return opencl_copy_fail(b, oq, what,
                                to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", e, err);
    }
    return opencl_queue_report(b, oq, err);
}

tack_status opencl_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                             tack_error *err) {
    return copy(b, &b->main, 1, (cl_mem)handle, offset, (void *)src, n, err);
}

tack_status opencl_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                            tack_error *err) {
    return copy(b, &b->main, 0, (cl_mem)handle, offset, dst, n, err);
}

tack_status opencl_queue_mem_write(backend *b, void *queue, void *handle, size_t offset,
                                   const void *src, size_t n, tack_error *err) {
    return copy(b, opencl_queue_of(b, queue), 1, (cl_mem)handle, offset, (void *)src, n, err);
}

tack_status opencl_queue_mem_read(backend *b, void *queue, const void *handle, size_t offset,
                                  void *dst, size_t n, tack_error *err) {
    return copy(b, opencl_queue_of(b, queue), 0, (cl_mem)handle, offset, dst, n, err);
}

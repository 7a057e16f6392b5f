/* test_backend.c - a backend added without touching the runtime: "devsim"
 * registers a table that runs kernels with the CPU's code generator but
 * claims device memory of its own, so the runtime's device rules run here
 * whatever GPU stack is installed: host arrays refused naming the
 * parameter, device arrays accepted, one variant whatever the overlap,
 * debug records staged through device memory. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "tack.h"

static int launches, allocs, frees;

/* Device memory: malloc'd blocks marked so a host pointer passed as one is
 * caught. */
#define MAGIC 0x7461636b6d656dull
typedef struct block {
    uint64_t magic;
    size_t n;
    unsigned char data[];
} block;

static tack_status sim_open(int index, int num_threads, backend **out, tack_error *err) {
    return backend_cpu.open(index, num_threads > 0 ? num_threads : 1, out, err);
}

static void sim_caps(const backend *b, backend_caps *c) {
    backend_cpu.caps(b, c);
    c->host_memory = 0;
    c->locked_dispatch = 1;
    c->max_alloc_bytes = 1 << 20;
}

static const char *sim_describe(const backend *b) {
    (void)b;
    return "simulated device memory on the CPU";
}

static const char *sim_target(const backend *b) {
    (void)b;
    return NULL; /* only the IR level goes to the disk cache */
}

/* The CPU's code reads slots as addresses: hand it the blocks' data (the
 * range function too: debug mode reads its extents from a hidden array). */
static backend_call on_host(const backend_call *call, uint64_t *slots) {
    for (int p = 0; p < call->nparams; p++) {
        block *blk = (block *)(uintptr_t)call->slots[p];
        slots[p] = blk && blk->magic == MAGIC ? (uint64_t)(uintptr_t)blk->data : call->slots[p];
    }
    backend_call host = *call;
    host.slots = slots;
    return host;
}

static tack_status sim_range(backend *b, backend_code *c, const backend_call *call,
                             int64_t out[BACKEND_RANGE_LEN], tack_error *err) {
    uint64_t slots[2 * TACK_MAX_PARAMS];
    backend_call host = on_host(call, slots);
    return backend_cpu.range(b, c, &host, out, err);
}

static tack_status sim_launch(backend *b, backend_code *c, const backend_call *call, tack_error *err) {
    uint64_t slots[2 * TACK_MAX_PARAMS];
    backend_call host = on_host(call, slots);
    launches++;
    return backend_cpu.launch(b, c, &host, err);
}

static tack_status sim_alloc(backend *b, size_t n, void **h, tack_error *err) {
    (void)b, (void)err;
    block *blk = calloc(1, sizeof *blk + n + 8);
    blk->magic = MAGIC;
    blk->n = n;
    *h = blk;
    allocs++;
    return TACK_OK;
}

static void sim_free(backend *b, void *h) {
    (void)b;
    frees++;
    free(h);
}

static tack_status sim_write(backend *b, void *h, size_t off, const void *src, size_t n, tack_error *err) {
    (void)b, (void)err;
    memcpy(((block *)h)->data + off, src, n);
    return TACK_OK;
}

static tack_status sim_read(backend *b, const void *h, size_t off, void *dst, size_t n, tack_error *err) {
    (void)b, (void)err;
    memcpy(dst, ((const block *)h)->data + off, n);
    return TACK_OK;
}

static backend_ops devsim;

static tack_kernel *make(const char *src) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "test_backend.py", 1, NULL, NULL, &err);
    if (!k) fprintf(stderr, "unexpected compile error: %s\n", err.message);
    return k;
}

int main(void) {
    devsim = backend_cpu;
    devsim.name = "devsim";
    devsim.open = sim_open;
    devsim.caps = sim_caps;
    devsim.describe = sim_describe;
    devsim.cache_target = sim_target;
    devsim.range = sim_range;
    devsim.launch = sim_launch;
    devsim.mem_alloc = sim_alloc;
    devsim.mem_free = sim_free;
    devsim.mem_write = sim_write;
    devsim.mem_read = sim_read;
    CHECK(backend_register(&devsim) == 0);
    CHECK(backend_register(&devsim) == -1); /* the name is taken */

    tack_error err;
    tack_device *dev = tack_device_get("devsim", &err);
    CHECK(dev && !tack_device_host_memory(dev) && !strcmp(tack_device_name(dev), "devsim:0"));
    if (!dev) return CHECK_DONE();
    CHECK(tack_device_get("devsim:0", &err) == dev);

    tack_kernel *k = make("def add(x, y, out):\n"
                          "    for i in range(x.shape[0]):\n"
                          "        out[i] = x[i] + y[i]\n");
    float hx[16], hy[16], hout[16];
    for (int i = 0; i < 16; i++) hx[i] = (float)i, hy[i] = 0.5f, hout[i] = -1;
    int64_t n = 16;

    /* Host arrays are refused, naming the parameter and the fix. */
    tack_arg host[3] = {tack_arg_array(hx, TACK_F32, 1, &n, 0), tack_arg_array(hy, TACK_F32, 1, &n, 0),
                        tack_arg_array(hout, TACK_F32, 1, &n, 1)};
    CHECK(tack_kernel_launch(k, dev, host, 3, &err) == TACK_ERR_TYPE &&
          strstr(err.message, "parameter 'x' is a host array") && strstr(err.message, "tack_device_alloc"));
    CHECK(launches == 0 && hout[0] == -1);

    /* Device arrays run. */
    void *dx = tack_device_alloc(dev, sizeof hx, &err), *dy = tack_device_alloc(dev, sizeof hy, &err),
         *dout = tack_device_alloc(dev, sizeof hout, &err);
    CHECK(dx && dy && dout);
    CHECK(tack_device_write(dev, dx, 0, hx, sizeof hx, &err) == TACK_OK);
    CHECK(tack_device_write(dev, dy, 0, hy, sizeof hy, &err) == TACK_OK);
    tack_arg args[3] = {tack_arg_array(dx, TACK_F32, 1, &n, 0), tack_arg_array(dy, TACK_F32, 1, &n, 0),
                        tack_arg_array(dout, TACK_F32, 1, &n, 1)};
    for (int i = 0; i < 3; i++) args[i].device = dev;
    CHECK(tack_kernel_launch(k, dev, args, 3, &err) == TACK_OK);
    CHECK(tack_device_read(dev, dout, 0, hout, sizeof hout, &err) == TACK_OK);
    CHECK(hout[0] == 0.5f && hout[15] == 15.5f && launches == 1);
    /* The same memory as input and output: still the one variant, never
     * disjoint off the host. */
    tack_arg inplace[3] = {args[2], args[1], args[2]};
    CHECK(tack_kernel_launch(k, dev, inplace, 3, &err) == TACK_OK);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    tack_variant_key key;
    CHECK(tack_kernel_variant_key(k, dev, 0, &key) == TACK_OK && key.disjoint == 0);
    CHECK(tack_device_read(dev, dout, 0, hout, sizeof hout, &err) == TACK_OK && hout[15] == 16.0f);

    /* Arrays of another device are refused. */
    tack_device *cpu = tack_device_get("cpu", &err);
    tack_arg mixed[3] = {args[0], args[1], tack_arg_array(hout, TACK_F32, 1, &n, 1)};
    mixed[2].device = cpu;
    CHECK(tack_kernel_launch(k, dev, mixed, 3, &err) == TACK_ERR_TYPE && strstr(err.message, "'out'"));

    /* Foreign memory: a device whose handles are not addresses cannot wrap
     * it; the CPU's handles are pointers.  Synchronizing has nothing to
     * wait for on either. */
    CHECK(!tack_device_wrap_mem(dev, (uint64_t)(uintptr_t)hx, sizeof hx, &err) &&
          err.status == TACK_ERR_VALUE && strstr(err.message, "devsim:0"));
    CHECK(tack_device_wrap_mem(cpu, (uint64_t)(uintptr_t)hx, sizeof hx, &err) == (void *)hx);
    CHECK(!tack_device_wrap_mem(cpu, 0, 0, &err) && err.status == TACK_ERR_VALUE);
    CHECK(tack_device_synchronize(dev, &err) == TACK_OK && tack_device_synchronize(cpu, &err) == TACK_OK);

    /* Allocations past the device's limit are refused, naming it. */
    CHECK(tack_device_alloc(dev, (size_t)1 << 21, &err) == NULL && err.status == TACK_ERR_NOMEM &&
          strstr(err.message, "1048576"));

    /* Debug mode: the record is staged through device memory. */
    tack_kernel *g = make("def gather(x, idx, out):\n"
                          "    for i in range(idx.shape[0]):\n"
                          "        out[i] = x[idx[i]]\n");
    int64_t hidx[4] = {0, 3, 99, 1}, n4 = 4;
    void *didx = tack_device_alloc(dev, sizeof hidx, &err);
    tack_device_write(dev, didx, 0, hidx, sizeof hidx, &err);
    tack_arg ga[3] = {args[0], tack_arg_array(didx, TACK_I64, 1, &n4, 0),
                      tack_arg_array(dout, TACK_F32, 1, &n4, 1)};
    ga[1].device = ga[2].device = dev;
    int before_allocs = allocs, before_frees = frees;
    tack_set_debug(1);
    CHECK(tack_kernel_launch(g, dev, ga, 3, &err) == TACK_ERR_INDEX && strstr(err.message, "(99,)") &&
          strstr(err.message, "'x'"));
    tack_set_debug(0);
    CHECK(allocs == before_allocs + 2 && frees == before_frees + 2);

    tack_device_free_mem(dev, dx);
    tack_device_free_mem(dev, dy);
    tack_device_free_mem(dev, dout);
    tack_device_free_mem(dev, didx);
    tack_kernel_free(k);
    tack_kernel_free(g);
    return CHECK_DONE();
}

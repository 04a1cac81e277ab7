/*
 * The HIP device component: AMD GPUs through the HIP runtime API, in plain C.
 *
 * The same structure as the CUDA component (device/cuda/), smaller: device memory is a
 * pool of hipMalloc chunks (hipFree synchronizes the device); copies are one
 * hipMemcpyAsync each (loop) or, where the runtime has it (ROCm 7.1 and later), one
 * hipMemcpyBatchAsync (engine). There is no SM copy kernel: that would need hipcc. Pinned
 * host memory is in hip_hostmem.c.
 *
 * Threads: as on CUDA, every op that talks to the device makes it current first.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/hip/hip_dev.h"
#include "src/context.h"

#define POOL_ALIGN 256
#define OWN_CHUNK_ROUND (2u << 20)

const convoy__param_def_t convoy__hip_params[] = {
    {.name = "hip_memory",
     .type = CONVOY__PARAM_SIZE,
     .def = "0",
     .min = 0,
     .max = 1125899906842624.0,
     .doc = "device memory convoy may use per HIP device; 0: 90% of what is free at start"},
    {.name = "hip_pool_chunk",
     .type = CONVOY__PARAM_SIZE,
     .def = "256M",
     .min = 2097152.0,
     .max = 1099511627776.0,
     .doc = "device memory is taken from HIP in chunks of this size, kept until fini (hipFree "
            "synchronizes the device) unless a request needs an empty one's room; larger "
            "requests get their own chunk"},
    {.name = "hip_host_slab",
     .type = CONVOY__PARAM_SIZE,
     .def = "64M",
     .min = 65536.0,
     .max = 1099511627776.0,
     .doc = "convoy_host_alloc pins host memory a slab of this size at a time (PHYSICS.md s2: "
            "registration costs 0.3-4 ms per call); larger blocks get their own slab"},
    {0},
};

typedef struct hip_dev {
    convoy__device_t base; /* first: what the pipeline sees */
    int ordinal;           /* the HIP device number (hipSetDevice) */
    pthread_mutex_t pool_lock;
    convoy__arena_t *pool; /* regions: hipMalloc chunks */
    size_t pool_chunk;
    convoy__hip_hostmem_t *hostmem;
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_t eng_lock; /* the engine scratch */
    void **eng_dsts;
    void **eng_srcs;
    size_t *eng_sizes;
    int eng_cap;
    int eng_no_attrs; /* the runtime rejected attributes once (ROCm 7.2): pass none */
#endif
} hip_dev_t;

static hip_dev_t *hip_dev(convoy__device_t *d)
{
    return (hip_dev_t *)d;
}

static const char *const dir_names[3] = {"H2D", "D2H", "D2D"};

/* ---- errors ------------------------------------------------------------------------ */

int convoy__hip_is_sticky(hipError_t rc)
{
    switch ((int)rc) { /* the device-fault codes HIP shares with CUDA */
    case 700:          /* hipErrorIllegalAddress */
    case 702:          /* launch timeout */
    case 710:          /* hipErrorAssert */
    case 719: /* hipErrorLaunchFailure */ return 1;
    default: return 0;
    }
}

convoy_status_t convoy__hip_fail(hipError_t rc, const char *call, convoy_context_t *ctx,
                                 const char *where)
{
    int sticky = convoy__hip_is_sticky(rc);
    if (!sticky)
        (void)hipGetLastError();
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "%s: %s failed: %s (%d: %s)%s", where, call,
                         hipGetErrorName(rc), (int)rc, hipGetErrorString(rc),
                         sticky ? "; the HIP context is unusable from now on" : "");
}

static convoy_status_t hip_enter(hip_dev_t *dev)
{
    return CONVOY_HIP_CALL(dev->base.ctx, dev->base.name, hipSetDevice(dev->ordinal));
}

/* ---- device memory ----------------------------------------------------------------- */

/* Add a chunk that can hold need bytes; under pool_lock. When the capacity is all
 * reserved, empty chunks are given back first (hipFree waits for the device: only then). */
static convoy_status_t pool_grow(hip_dev_t *dev, size_t need)
{
    convoy__device_t *b = &dev->base;
    size_t reserved = convoy__arena_reserved(dev->pool);
    if (b->mem_capacity - CONVOY__MIN(b->mem_capacity, reserved) < need) {
        convoy_status_t st = hip_enter(dev);
        if (st != CONVOY_SUCCESS)
            return st;
        for (int i = convoy__arena_region_count(dev->pool) - 1; i >= 0; i--) {
            void *base;
            if (convoy__arena_remove(dev->pool, i, &base) == 0)
                CONVOY_HIP_CALL(NULL, b->name, hipFree(base));
        }
        reserved = convoy__arena_reserved(dev->pool);
    }
    size_t room =
        (b->mem_capacity > reserved ? b->mem_capacity - reserved : 0) & ~(size_t)(POOL_ALIGN - 1);
    size_t size = need <= dev->pool_chunk
                      ? dev->pool_chunk
                      : (need + OWN_CHUNK_ROUND - 1) & ~(size_t)(OWN_CHUNK_ROUND - 1);
    if (size > room)
        size = room;
    if (size < need)
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                             "%s: device memory full: %zu bytes asked, %zu of %zu in use", b->name,
                             need, convoy__arena_in_use(dev->pool), b->mem_capacity);
    convoy_status_t st = hip_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    void *chunk = NULL;
    hipError_t rc = hipMalloc(&chunk, size);
    if (rc == hipErrorOutOfMemory) {
        (void)hipGetLastError();
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                             "%s: hipMalloc of a %zu-byte chunk failed (out of memory)", b->name,
                             size);
    }
    if ((st = CONVOY_HIP_CALL(b->ctx, b->name, rc)) != CONVOY_SUCCESS)
        return st;
    if (convoy__arena_add(dev->pool, chunk, size, NULL) != 0) {
        CONVOY_HIP_CALL(NULL, b->name, hipFree(chunk));
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for pool records",
                             b->name);
    }
    return CONVOY_SUCCESS;
}

static convoy_status_t hip_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    hip_dev_t *dev = hip_dev(d);
    if (ptr_p == NULL || bytes == 0)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: mem_alloc: %s", d->name,
                             ptr_p ? "0 bytes asked" : "NULL ptr_p");
    if (bytes > d->mem_capacity)
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                             "%s: mem_alloc: %zu bytes exceed the capacity, %zu bytes", d->name,
                             bytes, d->mem_capacity);
    size_t need = (bytes + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
    convoy_status_t st = CONVOY_SUCCESS;
    void *p = NULL;
    pthread_mutex_lock(&dev->pool_lock);
    if (convoy__arena_in_use(dev->pool) + need > d->mem_capacity)
        st = convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                           "%s: device memory full: %zu bytes asked, %zu of %zu in use", d->name,
                           bytes, convoy__arena_in_use(dev->pool), d->mem_capacity);
    else if ((p = convoy__arena_alloc(dev->pool, need)) == NULL &&
             (st = pool_grow(dev, need)) == CONVOY_SUCCESS &&
             (p = convoy__arena_alloc(dev->pool, need)) == NULL)
        st = convoy__error(d->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for pool records",
                           d->name);
    pthread_mutex_unlock(&dev->pool_lock);
    if (st == CONVOY_SUCCESS)
        *ptr_p = p;
    return st;
}

static void hip_mem_free(convoy__device_t *d, void *ptr)
{
    hip_dev_t *dev = hip_dev(d);
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&dev->pool_lock);
    size_t size = convoy__arena_free(dev->pool, ptr);
    pthread_mutex_unlock(&dev->pool_lock);
    if (size == 0)
        convoy__log_error("%s: mem_free(%p): not a live allocation of this device", d->name, ptr);
}

/* ---- streams, events, launches ----------------------------------------------------- */

static convoy_status_t hip_stream_create(convoy__device_t *d, convoy__stream_t **stream_p)
{
    hipStream_t s;
    convoy_status_t st = hip_enter(hip_dev(d));
    if (st == CONVOY_SUCCESS)
        st = CONVOY_HIP_CALL(d->ctx, d->name, hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    if (st == CONVOY_SUCCESS)
        *stream_p = (convoy__stream_t *)(void *)s;
    return st;
}

static void hip_stream_destroy(convoy__device_t *d, convoy__stream_t *stream)
{
    if (stream != NULL && hip_enter(hip_dev(d)) == CONVOY_SUCCESS)
        CONVOY_HIP_CALL(d->ctx, d->name, hipStreamDestroy((hipStream_t)(void *)stream));
}

static void *hip_stream_native(convoy__device_t *d, convoy__stream_t *stream)
{
    (void)d;
    return (void *)stream;
}

static convoy_status_t hip_event_create(convoy__device_t *d, convoy__event_t **event_p)
{
    hipEvent_t e;
    convoy_status_t st = hip_enter(hip_dev(d));
    if (st == CONVOY_SUCCESS)
        st = CONVOY_HIP_CALL(d->ctx, d->name, hipEventCreateWithFlags(&e, hipEventDisableTiming));
    if (st == CONVOY_SUCCESS)
        *event_p = (convoy__event_t *)(void *)e;
    return st;
}

static void hip_event_destroy(convoy__device_t *d, convoy__event_t *event)
{
    if (event != NULL && hip_enter(hip_dev(d)) == CONVOY_SUCCESS)
        CONVOY_HIP_CALL(d->ctx, d->name, hipEventDestroy((hipEvent_t)(void *)event));
}

static convoy_status_t hip_event_record(convoy__device_t *d, convoy__event_t *event,
                                        convoy__stream_t *stream)
{
    convoy_status_t st = hip_enter(hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(d->ctx, d->name,
                           hipEventRecord((hipEvent_t)(void *)event, (hipStream_t)(void *)stream));
}

/* Polled often: no hipSetDevice. NotReady is not an error. */
static int hip_event_query(convoy__device_t *d, convoy__event_t *event)
{
    hipError_t rc = hipEventQuery((hipEvent_t)(void *)event);
    if (rc == hipSuccess)
        return 1;
    if (rc == hipErrorNotReady)
        return 0;
    return (int)CONVOY_HIP_CALL(d->ctx, d->name, rc);
}

static convoy_status_t hip_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                             convoy__event_t *event)
{
    convoy_status_t st = hip_enter(hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(
        d->ctx, d->name,
        hipStreamWaitEvent((hipStream_t)(void *)stream, (hipEvent_t)(void *)event, 0));
}

/* launch_inline, as on CUDA: fn runs now; launch fails only when HIP reports an error
 * after it. */
static convoy_status_t hip_launch(convoy__device_t *d, convoy__stream_t *stream,
                                  convoy__launch_fn fn, void *arg)
{
    if (fn == NULL || stream == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: launch: NULL %s", d->name,
                             fn == NULL ? "fn" : "stream");
    convoy_status_t st = hip_enter(hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    hipError_t stale = hipGetLastError();
    if (stale != hipSuccess && convoy__hip_is_sticky(stale))
        return CONVOY_HIP_CALL(d->ctx, d->name, stale);
    int rc = fn(arg, (void *)stream);
    st = CONVOY_HIP_CALL(d->ctx, d->name, hipGetLastError());
    if (st != CONVOY_SUCCESS) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        return convoy__error(d->ctx, st, "%s (after a chore that returned %d)", msg, rc);
    }
    return CONVOY_SUCCESS;
}

/* ---- copies ------------------------------------------------------------------------ */

static hipMemcpyKind kind_of(int dir)
{
    return dir == CONVOY__H2D   ? hipMemcpyHostToDevice
           : dir == CONVOY__D2H ? hipMemcpyDeviceToHost
                                : hipMemcpyDeviceToDevice;
}

static convoy_status_t check_copies(hip_dev_t *dev, const char *what, const convoy__copy_t *copies,
                                    int n)
{
    convoy__device_t *b = &dev->base;
    if (copies == NULL)
        return convoy__error(b->ctx, CONVOY_ERR_INVALID, "%s: %s: NULL copies", b->name, what);
    if (n < 1 || n > b->max_batch)
        return convoy__error(b->ctx, CONVOY_ERR_INVALID, "%s: %s: n = %d is outside 1..%d", b->name,
                             what, n, b->max_batch);
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        if (c->dst == NULL || c->src == NULL || c->bytes == 0)
            return convoy__error(b->ctx, CONVOY_ERR_INVALID,
                                 "%s: %s: copy %d: dst %p, src %p, bytes %zu (NULL pointers and "
                                 "empty copies are not allowed)",
                                 b->name, what, i, c->dst, c->src, c->bytes);
        if (c->dir > CONVOY__D2D)
            return convoy__error(b->ctx, CONVOY_ERR_INVALID, "%s: %s: copy %d: dir %u is unknown",
                                 b->name, what, i, (unsigned)c->dir);
    }
    return CONVOY_SUCCESS;
}

static convoy_status_t copy_loop(hip_dev_t *dev, hipStream_t s, const convoy__copy_t *copies, int n,
                                 int *done_p)
{
    convoy__device_t *b = &dev->base;
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        convoy_status_t st = CONVOY_HIP_CALL(
            b->ctx, b->name, hipMemcpyAsync(c->dst, c->src, c->bytes, kind_of(c->dir), s));
        if (st != CONVOY_SUCCESS) {
            *done_p = i;
            char msg[640];
            snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
            return convoy__error(b->ctx, st,
                                 "%s [memcpy_multi loop, copy %d of %d: %s of %zu bytes]", msg, i,
                                 n, dir_names[c->dir], c->bytes);
        }
    }
    *done_p = n;
    return CONVOY_SUCCESS;
}

#if CONVOY_HAVE_HIP_BATCH
/*
 * One hipMemcpyBatchAsync (ROCm 7.1 and later, the CUDA 12.8 form with failIdx). One
 * attribute asks for stream-ordered source reads; ROCm 7.2 rejects any attribute with
 * hipErrorNotSupported (and then carries a batch as an internal per-copy loop), so on
 * that answer the call is repeated without attributes, which is stream order there, and
 * later calls pass none. failIdx names the failing copy; the ones before it are enqueued.
 */
static convoy_status_t copy_engine(hip_dev_t *dev, hipStream_t s, const convoy__copy_t *copies,
                                   int n, int *done_p)
{
    convoy__device_t *b = &dev->base;
    *done_p = 0;
    if (n > dev->eng_cap) {
        int cap = dev->eng_cap ? dev->eng_cap : 64;
        while (cap < n)
            cap *= 2;
        void **dd = realloc(dev->eng_dsts, (size_t)cap * sizeof(*dd));
        if (dd != NULL)
            dev->eng_dsts = dd;
        void **ss = realloc(dev->eng_srcs, (size_t)cap * sizeof(*ss));
        if (ss != NULL)
            dev->eng_srcs = ss;
        size_t *zz = realloc(dev->eng_sizes, (size_t)cap * sizeof(*zz));
        if (zz != NULL)
            dev->eng_sizes = zz;
        if (dd == NULL || ss == NULL || zz == NULL)
            return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                                 "%s: memcpy_multi engine: out of host memory for %d entries",
                                 b->name, n);
        dev->eng_cap = cap;
    }
    for (int i = 0; i < n; i++) {
        dev->eng_dsts[i] = copies[i].dst;
        dev->eng_srcs[i] = (void *)copies[i].src;
        dev->eng_sizes[i] = copies[i].bytes;
    }
    hipMemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = hipMemcpySrcAccessOrderStream;
    size_t attr_idx = 0, fail_idx = SIZE_MAX;
    hipError_t rc = hipErrorNotSupported;
    if (!dev->eng_no_attrs) {
        rc = hipMemcpyBatchAsync((void *)dev->eng_dsts, (void *)dev->eng_srcs,
                                 (void *)dev->eng_sizes, (size_t)n, &attr, &attr_idx, 1, &fail_idx,
                                 s);
        if (rc == hipErrorNotSupported) {
            (void)hipGetLastError();
            dev->eng_no_attrs = 1;
            convoy__log_info("%s: hipMemcpyBatchAsync takes no attributes here; passing none",
                             b->name);
        }
    }
    if (dev->eng_no_attrs) {
        fail_idx = SIZE_MAX;
        rc = hipMemcpyBatchAsync((void *)dev->eng_dsts, (void *)dev->eng_srcs,
                                 (void *)dev->eng_sizes, (size_t)n, NULL, NULL, 0, &fail_idx, s);
    }
    convoy_status_t st = CONVOY_HIP_CALL(b->ctx, b->name, rc);
    if (st == CONVOY_SUCCESS) {
        *done_p = n;
        return CONVOY_SUCCESS;
    }
    if (fail_idx < (size_t)n)
        *done_p = (int)fail_idx;
    char msg[640];
    snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
    return convoy__error(b->ctx, st, "%s [memcpy_multi engine of %d copies, failed at %d]", msg, n,
                         *done_p);
}
#endif

/* auto: pageable device-to-host copies one call each (batching them is 2.5-4x slower,
 * PHYSICS.md s2); a single copy alone; else the batch call where the runtime has it. */
static int auto_method(const hip_dev_t *dev, const convoy__copy_t *copies, int n)
{
    for (int i = 0; i < n; i++)
        if (copies[i].dir == CONVOY__D2H && !(copies[i].flags & CONVOY__COPY_HOST_PINNED))
            return CONVOY__METHOD_LOOP;
    if (n == 1)
        return CONVOY__METHOD_LOOP;
    return (dev->base.methods >> CONVOY__METHOD_ENGINE) & 1u ? CONVOY__METHOD_ENGINE
                                                             : CONVOY__METHOD_LOOP;
}

static convoy_status_t hip_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                  const convoy__copy_t *copy)
{
    hip_dev_t *dev = hip_dev(d);
    convoy_status_t st = check_copies(dev, "memcpy", copy, 1);
    if (st == CONVOY_SUCCESS && stream == NULL)
        st = convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: memcpy: NULL stream", d->name);
    if (st == CONVOY_SUCCESS)
        st = hip_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(d->ctx, d->name,
                           hipMemcpyAsync(copy->dst, copy->src, copy->bytes, kind_of(copy->dir),
                                          (hipStream_t)(void *)stream));
}

/* See device.h; *submitted_p is set in every case (0 on a validation error). */
static convoy_status_t hip_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                        const convoy__copy_t *copies, int n, int method,
                                        int *submitted_p, int *method_p)
{
    hip_dev_t *dev = hip_dev(d);
    int done = 0;
    if (submitted_p != NULL)
        *submitted_p = 0;
    convoy_status_t st = check_copies(dev, "memcpy_multi", copies, n);
    if (st == CONVOY_SUCCESS && stream == NULL)
        st = convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: memcpy_multi: NULL stream", d->name);
    if (st == CONVOY_SUCCESS && method >= 0 &&
        (method >= CONVOY__METHOD_COUNT || !((d->methods >> method) & 1u)))
        st = convoy__error(d->ctx, CONVOY_ERR_INVALID,
                           "%s: memcpy_multi: method %d (%s) is not offered by this device "
                           "(HIP has loop%s)",
                           d->name, method,
                           method < CONVOY__METHOD_COUNT ? convoy__copy_method_name(method)
                                                         : "unknown",
                           (d->methods >> CONVOY__METHOD_ENGINE) & 1u ? " and engine" : "");
    if (st == CONVOY_SUCCESS)
        st = hip_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    hipStream_t s = (hipStream_t)(void *)stream;
    int used = method >= 0 ? method : auto_method(dev, copies, n);
#if CONVOY_HAVE_HIP_BATCH
    if (used == CONVOY__METHOD_ENGINE) {
        pthread_mutex_lock(&dev->eng_lock);
        st = copy_engine(dev, s, copies, n, &done);
        pthread_mutex_unlock(&dev->eng_lock);
    } else
#endif
        st = copy_loop(dev, s, copies, n, &done);
    if (submitted_p != NULL)
        *submitted_p = done;
    if (st == CONVOY_SUCCESS && method_p != NULL)
        *method_p = used;
    return st;
}

static const convoy__device_ops_t hip_ops = {
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .stream_create = hip_stream_create,
    .stream_destroy = hip_stream_destroy,
    .stream_native = hip_stream_native,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_query = hip_event_query,
    .stream_wait_event = hip_stream_wait_event,
    .memcpy = hip_memcpy,
    .memcpy_multi = hip_memcpy_multi,
    .launch = hip_launch,
    .idle_wait = NULL,
};

/* ---- the component ----------------------------------------------------------------- */

/* hipGetDeviceCount: hipErrorNoDevice (100, n set to 0) without a GPU; any error means
 * no HIP here. */
static int hip_query(convoy_context_t *ctx, char *why, size_t why_len)
{
    (void)ctx;
    int n = 0;
    hipError_t rc = hipGetDeviceCount(&n);
    if (rc != hipSuccess) {
        (void)hipGetLastError();
        if (why != NULL && why_len > 0)
            snprintf(why, why_len, "%s (hipGetDeviceCount: %s, %d)",
                     rc == hipErrorNoDevice ? "no HIP device" : "HIP cannot start",
                     hipGetErrorName(rc), (int)rc);
        return 0;
    }
    if (n <= 0 && why != NULL && why_len > 0)
        snprintf(why, why_len, "hipGetDeviceCount found no device");
    return n > 0 ? n : 0;
}

static void hip_close(convoy__device_t *d);

static convoy_status_t hip_open(convoy_context_t *ctx, int local_index, int global_index,
                                convoy__device_t **dev_p)
{
    const convoy__params_t *p = convoy__ctx_params(ctx);
    hip_dev_t *dev = convoy__calloc(ctx, 1, sizeof(*dev), "a HIP device");
    if (dev == NULL)
        return CONVOY_ERR_NOMEM;
    convoy__device_t *b = &dev->base;
    b->component = &convoy__device_hip;
    b->ops = &hip_ops;
    b->ctx = ctx;
    b->kind = CONVOY_DEVICE_HIP;
    b->index = global_index;
    snprintf(b->name, sizeof(b->name), "hip%d", local_index);
    b->max_batch = 4096;
    b->launch_inline = 1;
    b->methods = 1u << CONVOY__METHOD_LOOP;
#if CONVOY_HAVE_HIP_BATCH
    b->methods |= 1u << CONVOY__METHOD_ENGINE;
#endif
    dev->ordinal = local_index;
    dev->pool_chunk = (size_t)convoy__param_int(p, "hip_pool_chunk");

    size_t free_bytes = 0, total_bytes = 0;
    convoy_status_t st = hip_enter(dev);
    if (st == CONVOY_SUCCESS)
        st = CONVOY_HIP_CALL(ctx, b->name, hipMemGetInfo(&free_bytes, &total_bytes));
    if (st != CONVOY_SUCCESS) {
        free(dev);
        return st;
    }
    size_t want = (size_t)convoy__param_int(p, "hip_memory");
    b->mem_capacity = want > 0 ? want : free_bytes / 10 * 9;

    dev->pool = convoy__arena_new(POOL_ALIGN);
    if (dev->pool == NULL) {
        free(dev);
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for the pool", b->name);
    }
    pthread_mutex_init(&dev->pool_lock, NULL);
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_init(&dev->eng_lock, NULL);
#endif
    dev->hostmem = convoy__hip_hostmem_attach(ctx, (size_t)convoy__param_int(p, "hip_host_slab"));
    if (dev->hostmem == NULL) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        hip_close(b);
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "%s", msg);
    }
    convoy__log_info("%s: %zu of %zu bytes free, capacity %zu, methods loop%s", b->name, free_bytes,
                     total_bytes, b->mem_capacity,
                     (b->methods >> CONVOY__METHOD_ENGINE) & 1u ? ", engine" : "");
    *dev_p = b;
    return CONVOY_SUCCESS;
}

static void hip_close(convoy__device_t *d)
{
    if (d == NULL)
        return;
    hip_dev_t *dev = hip_dev(d);
    if (hip_enter(dev) != CONVOY_SUCCESS)
        convoy__log_warn("%s: close: %s", d->name, convoy_last_error(NULL));
    if (convoy__arena_live(dev->pool) > 0)
        convoy__log_info("%s: closed with %zu bytes of device memory in use (%zu allocations)",
                         d->name, convoy__arena_in_use(dev->pool), convoy__arena_live(dev->pool));
    for (int i = 0; i < convoy__arena_region_count(dev->pool); i++)
        CONVOY_HIP_CALL(NULL, d->name, hipFree(convoy__arena_region_at(dev->pool, i)->base));
    convoy__arena_destroy(dev->pool);
    pthread_mutex_destroy(&dev->pool_lock);
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_destroy(&dev->eng_lock);
    free(dev->eng_dsts);
    free(dev->eng_srcs);
    free(dev->eng_sizes);
#endif
    convoy__hip_hostmem_detach(dev->hostmem);
    free(dev);
}

const convoy__device_component_t convoy__device_hip = {
    .name = "hip",
    .priority = 10,
    .kind = CONVOY_DEVICE_HIP,
    .doc = "AMD GPUs (HIP runtime, plain C): pooled device memory, per-copy or batched copies, "
           "pinned host slabs",
    .params = convoy__hip_params,
    .query = hip_query,
    .open = hip_open,
    .close = hip_close,
    .host_mem = &convoy__hip_host_mem_ops,
};

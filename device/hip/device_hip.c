/*
 * The HIP device component: AMD GPUs through the HIP runtime API, in plain C.
 *
 * The same structure as the CUDA component (device/cuda/), smaller: device memory is the
 * pool of device/devpool.h over hipMalloc chunks (hipFree synchronizes the device);
 * copies are one hipMemcpyAsync each (loop) or, where the runtime has it (ROCm 7.1 and
 * later), one hipMemcpyBatchAsync (engine). There is no SM copy kernel: that would need
 * hipcc. Pinned host memory is in hip_hostmem.c.
 *
 * Threads: as on CUDA, every op that talks to the device makes it current first.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/hip/hip_dev.h"
#include "src/context.h"

const convoy__param_def_t convoy__hip_params[] = {
    CONVOY__DEVPOOL_MEMORY_PARAM(
        "hip_memory",
        "device memory convoy may use per HIP device; 0: 90% of what is free at start"),
    CONVOY__DEVPOOL_CHUNK_PARAM(
        "hip_pool_chunk",
        "device memory is taken from HIP in chunks of this size, kept until fini (hipFree "
        "synchronizes the device) unless a request needs an empty one's room; larger "
        "requests get their own chunk"),
    CONVOY__HOSTSLAB_PARAM("hip_host_slab"),
    {0},
};

typedef struct hip_dev {
    convoy__device_t base;       /* first: what the pipeline sees */
    int ordinal;                 /* the HIP device number (hipSetDevice) */
    convoy__devpool_t pool;      /* device memory: hipMalloc chunks */
    convoy__hostslab_t *hostmem; /* the context's pinned slabs (hip_hostmem.c) */
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_t eng_lock; /* the engine scratch */
    convoy__copyargs_t eng;   /* the arrays of one hipMemcpyBatchAsync */
    int eng_no_attrs;         /* the runtime rejected attributes once (ROCm 7.2): pass none */
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

/* The HIP calls under the pool (devpool.h); hipFree synchronizes the device. */

static convoy_status_t hip_pool_enter(convoy__device_t *d)
{
    return hip_enter(hip_dev(d));
}

static convoy_status_t hip_chunk_alloc(convoy__device_t *d, size_t bytes, void **chunk_p)
{
    hipError_t rc = hipMalloc(chunk_p, bytes);
    if (rc == hipErrorOutOfMemory) {
        (void)hipGetLastError();
        return CONVOY_ERR_NOMEM;
    }
    return CONVOY_HIP_CALL(d->ctx, d->name, rc);
}

static void hip_chunk_free(convoy__device_t *d, void *chunk)
{
    CONVOY_HIP_CALL(NULL, d->name, hipFree(chunk));
}

static const convoy__devpool_ops_t hip_pool_ops = {
    .vendor = "HIP",
    .malloc_name = "hipMalloc",
    .enter = hip_pool_enter,
    .chunk_alloc = hip_chunk_alloc,
    .chunk_free = hip_chunk_free,
};

static convoy_status_t hip_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    return convoy__devpool_alloc(&hip_dev(d)->pool, bytes, ptr_p);
}

static void hip_mem_free(convoy__device_t *d, void *ptr)
{
    convoy__devpool_free(&hip_dev(d)->pool, ptr);
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

/* The pipeline's last resort when no event can be recorded (pipeline.c). */
static convoy_status_t hip_stream_sync(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy_status_t st = hip_enter(hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(d->ctx, d->name, hipStreamSynchronize((hipStream_t)(void *)stream));
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
    convoy_status_t st = convoy__copyargs_set(&dev->eng, b, copies, n);
    if (st != CONVOY_SUCCESS)
        return st;
    hipMemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = hipMemcpySrcAccessOrderStream;
    size_t attr_idx = 0, fail_idx = SIZE_MAX;
    hipError_t rc = hipErrorNotSupported;
    if (!dev->eng_no_attrs) {
        rc = hipMemcpyBatchAsync((void *)dev->eng.dsts, (void *)dev->eng.srcs,
                                 (void *)dev->eng.sizes, (size_t)n, &attr, &attr_idx, 1, &fail_idx,
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
        rc = hipMemcpyBatchAsync((void *)dev->eng.dsts, (void *)dev->eng.srcs,
                                 (void *)dev->eng.sizes, (size_t)n, NULL, NULL, 0, &fail_idx, s);
    }
    st = CONVOY_HIP_CALL(b->ctx, b->name, rc);
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
    convoy_status_t st = convoy__copyargs_check(d, "memcpy", stream, copy, 1);
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
    convoy_status_t st = convoy__copyargs_check(d, "memcpy_multi", stream, copies, n);
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
    .stream_sync = hip_stream_sync,
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

    st = convoy__devpool_init(&dev->pool, b, &hip_pool_ops,
                              (size_t)convoy__param_int(p, "hip_pool_chunk"));
    if (st != CONVOY_SUCCESS) {
        free(dev);
        return st;
    }
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_init(&dev->eng_lock, NULL);
#endif
    dev->hostmem = convoy__hostslab_attach(&convoy__hip_hostslab_ops, ctx,
                                           (size_t)convoy__param_int(p, "hip_host_slab"));
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
    convoy__devpool_fini(&dev->pool);
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_destroy(&dev->eng_lock);
    convoy__copyargs_fini(&dev->eng);
#endif
    convoy__hostslab_detach(dev->hostmem);
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

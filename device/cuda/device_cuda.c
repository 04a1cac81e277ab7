/*
 * The CUDA device component: NVIDIA GPUs through the CUDA runtime API.
 *
 * This file holds the component (parameters, query, open, close), the error conversion
 * behind CONVOY_CUDA_CALL, streams, events and launches. Device memory is in
 * cuda_mem.c, copies in cuda_copy.c and cuda_copy_kernel.cu, pinned host memory in
 * cuda_hostmem.c, over the vendor-neutral pool and slabs of device/ (see cuda_dev.h).
 *
 * Threads: the pipeline calls ops from the device's progress thread, except stream and
 * event creation (the init thread) and mem_free (any thread). Every op that talks to the
 * device makes it current first (cudaSetDevice: a thread-local store once the context
 * exists), so no thread needs to have selected the device beforehand.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_dev.h"
#include "src/context.h"

const convoy__param_def_t convoy__cuda_params[] = {
    CONVOY__DEVPOOL_MEMORY_PARAM(
        "cuda_memory",
        "device memory convoy may use per CUDA device; 0: 90% of what is free at start"),
    CONVOY__DEVPOOL_CHUNK_PARAM(
        "cuda_pool_chunk",
        "device memory is taken from CUDA in chunks of this size, kept until fini (cudaFree "
        "stalls the device) unless a request needs an empty one's room; larger requests "
        "get their own chunk"),
    CONVOY__HOSTSLAB_PARAM("cuda_host_slab"),
    {.name = "cuda_sm_max_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "256K",
     .min = 0,
     .max = 1073741824.0,
     .doc = "auto copy method: the SM kernel when the mean copy is at most this (PHYSICS.md "
            "s1: 45-51 GB/s for 8-64 KiB chunks vs 8-13 for batched engines; engines as good "
            "from 1 MiB); 0: never"},
    {.name = "cuda_sm_min_copies",
     .type = CONVOY__PARAM_INT,
     .def = "2",
     .min = 1,
     .max = 1048576.0,
     .doc = "auto copy method: the SM kernel only for submissions of at least this many "
            "copies (a single copy goes alone)"},
    {.name = "cuda_sm_threads",
     .type = CONVOY__PARAM_INT,
     .def = "256",
     .min = 32,
     .max = 1024,
     .doc = "threads per block of the SM copy kernel (PHYSICS.md s1 measured 256, one block "
            "per chunk, 16-byte loads)"},
    {.name = "cuda_sm_block_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "64K",
     .min = 4096.0,
     .max = 1073741824.0,
     .doc = "the SM copy kernel gives a copy one more block (up to 64) per this many bytes of "
            "its submission's largest copy; one block per chunk up to 64 KiB as measured"},
    {.name = "cuda_desc_slots",
     .type = CONVOY__PARAM_INT,
     .def = "65536",
     .min = 256,
     .max = 16777216.0,
     .doc = "SM copy descriptors per CUDA device (32 bytes each, mapped pinned memory): "
            "copies in flight through the SM kernel before the oldest must complete"},
    {0},
};

/* ---- errors ------------------------------------------------------------------------ */

int convoy__cuda_is_sticky(cudaError_t rc)
{
    /* Faults on the device (cuda_runtime_api.h: "the process must be terminated");
     * numbers rather than names, for runtimes that predate some of them. */
    switch ((int)rc) {
    case 214: /* cudaErrorECCUncorrectable */
    case 226: /* cudaErrorContained */
    case 700: /* cudaErrorIllegalAddress */
    case 702: /* cudaErrorLaunchTimeout */
    case 710: /* cudaErrorAssert */
    case 714: /* cudaErrorHardwareStackError */
    case 715: /* cudaErrorIllegalInstruction */
    case 716: /* cudaErrorMisalignedAddress */
    case 717: /* cudaErrorInvalidAddressSpace */
    case 718: /* cudaErrorInvalidPc */
    case 719: /* cudaErrorLaunchFailure */
    case 721: /* cudaErrorTensorMemoryLeak */ return 1;
    default: return 0;
    }
}

convoy_status_t convoy__cuda_fail(cudaError_t rc, const char *call, convoy_context_t *ctx,
                                  const char *where)
{
    int sticky = convoy__cuda_is_sticky(rc);
    if (!sticky)
        (void)cudaGetLastError(); /* a host-side failure: the next call starts clean */
    return convoy__error(ctx, CONVOY_ERR_DEVICE, "%s: %s failed: %s (%d: %s)%s", where, call,
                         cudaGetErrorName(rc), (int)rc, cudaGetErrorString(rc),
                         sticky ? "; the CUDA context is unusable from now on" : "");
}

/* ---- streams, events, launches ----------------------------------------------------- */

static convoy_status_t cuda_stream_create(convoy__device_t *d, convoy__stream_t **stream_p)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    cudaStream_t s;
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st == CONVOY_SUCCESS)
        st =
            CONVOY_CUDA_CALL(d->ctx, d->name, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (st == CONVOY_SUCCESS)
        *stream_p = (convoy__stream_t *)(void *)s;
    return st;
}

/* The work already enqueued still runs (CUDA frees the stream when it is done). */
static void cuda_stream_destroy(convoy__device_t *d, convoy__stream_t *stream)
{
    if (stream == NULL)
        return;
    if (convoy__cuda_enter(convoy__cuda_dev(d)) == CONVOY_SUCCESS)
        CONVOY_CUDA_CALL(d->ctx, d->name, cudaStreamDestroy(convoy__cuda_stream(stream)));
}

static void *cuda_stream_native(convoy__device_t *d, convoy__stream_t *stream)
{
    (void)d;
    return (void *)convoy__cuda_stream(stream);
}

static convoy_status_t cuda_event_create(convoy__device_t *d, convoy__event_t **event_p)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    cudaEvent_t e;
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st == CONVOY_SUCCESS)
        st =
            CONVOY_CUDA_CALL(d->ctx, d->name, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    if (st == CONVOY_SUCCESS)
        *event_p = (convoy__event_t *)(void *)e;
    return st;
}

static void cuda_event_destroy(convoy__device_t *d, convoy__event_t *event)
{
    if (event == NULL)
        return;
    if (convoy__cuda_enter(convoy__cuda_dev(d)) == CONVOY_SUCCESS)
        CONVOY_CUDA_CALL(d->ctx, d->name, cudaEventDestroy(convoy__cuda_event(event)));
}

static convoy_status_t cuda_event_record(convoy__device_t *d, convoy__event_t *event,
                                         convoy__stream_t *stream)
{
    convoy_status_t st = convoy__cuda_enter(convoy__cuda_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_CUDA_CALL(
        d->ctx, d->name, cudaEventRecord(convoy__cuda_event(event), convoy__cuda_stream(stream)));
}

/* Polled often by the progress thread: no cudaSetDevice (an event query does not depend
 * on the current device). NotReady is not an error and leaves the last error alone. */
static int cuda_event_query(convoy__device_t *d, convoy__event_t *event)
{
    cudaError_t rc = cudaEventQuery(convoy__cuda_event(event));
    if (rc == cudaSuccess)
        return 1;
    if (rc == cudaErrorNotReady)
        return 0;
    return (int)CONVOY_CUDA_CALL(d->ctx, d->name, rc);
}

static convoy_status_t cuda_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                              convoy__event_t *event)
{
    convoy_status_t st = convoy__cuda_enter(convoy__cuda_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_CUDA_CALL(
        d->ctx, d->name,
        cudaStreamWaitEvent(convoy__cuda_stream(stream), convoy__cuda_event(event), 0));
}

/* The pipeline's last resort when no event can be recorded (pipeline.c). */
static convoy_status_t cuda_stream_sync(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy_status_t st = convoy__cuda_enter(convoy__cuda_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_CUDA_CALL(d->ctx, d->name, cudaStreamSynchronize(convoy__cuda_stream(stream)));
}

/*
 * launch_inline: fn runs now, on this thread, and enqueues its kernels into the stream.
 * Its return value is the chore's own verdict, which the pipeline reads from the record
 * fn fills in; launch itself fails only when CUDA reports an error after fn (a kernel
 * that could not be launched), or a sticky error from before it.
 */
static convoy_status_t cuda_launch(convoy__device_t *d, convoy__stream_t *stream,
                                   convoy__launch_fn fn, void *arg)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    if (fn == NULL || stream == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: launch: NULL %s", d->name,
                             fn == NULL ? "fn" : "stream");
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    /* Start from a clean last error, so that what we read after fn is fn's. */
    cudaError_t stale = cudaGetLastError();
    if (stale != cudaSuccess && convoy__cuda_is_sticky(stale))
        return CONVOY_CUDA_CALL(d->ctx, d->name, stale);
    nvtxRangePushA("convoy launch");
    int rc = fn(arg, (void *)convoy__cuda_stream(stream));
    nvtxRangePop();
    st = CONVOY_CUDA_CALL(d->ctx, d->name, cudaGetLastError());
    if (st != CONVOY_SUCCESS) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        return convoy__error(d->ctx, st, "%s (after a chore that returned %d)", msg, rc);
    }
    return CONVOY_SUCCESS;
}

static const convoy__device_ops_t cuda_ops = {
    .mem_alloc = convoy__cuda_mem_alloc,
    .mem_free = convoy__cuda_mem_free,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_native = cuda_stream_native,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .stream_wait_event = cuda_stream_wait_event,
    .stream_sync = cuda_stream_sync,
    .memcpy = convoy__cuda_memcpy,
    .memcpy_multi = convoy__cuda_memcpy_multi,
    .launch = cuda_launch,
    .idle_wait = NULL, /* the pipeline polls (poll_us) */
};

/* ---- the component ----------------------------------------------------------------- */

/*
 * cudaGetDeviceCount loads the driver but creates no context, so a process may still
 * fork afterwards on a machine without a GPU (nothing is initialised there). Without a
 * driver the runtime answers cudaErrorInsufficientDriver (35; n is not written), with
 * only the toolkit's stub library cudaErrorStubLibrary (34), with a driver and no GPU
 * cudaErrorNoDevice (100): all mean "no CUDA here", as does any other error.
 */
static int cuda_query(convoy_context_t *ctx, char *why, size_t why_len)
{
    (void)ctx;
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        const char *what = rc == cudaErrorInsufficientDriver ? "no CUDA driver, or one older "
                                                               "than the runtime"
                           : rc == cudaErrorNoDevice         ? "no CUDA device"
                           : (int)rc == 34                   ? "only the CUDA stub library"
                                                             : "CUDA cannot start";
        if (why != NULL && why_len > 0)
            snprintf(why, why_len, "%s (cudaGetDeviceCount: %s, %d)", what, cudaGetErrorName(rc),
                     (int)rc);
        return 0;
    }
    if (n <= 0 && why != NULL && why_len > 0)
        snprintf(why, why_len, "cudaGetDeviceCount found no device");
    return n > 0 ? n : 0;
}

static void cuda_close(convoy__device_t *d);

static convoy_status_t cuda_open(convoy_context_t *ctx, int local_index, int global_index,
                                 convoy__device_t **dev_p)
{
    const convoy__params_t *p = convoy__ctx_params(ctx);
    convoy__cuda_dev_t *dev = convoy__calloc(ctx, 1, sizeof(*dev), "a CUDA device");
    if (dev == NULL)
        return CONVOY_ERR_NOMEM;
    convoy__device_t *b = &dev->base;
    b->component = &convoy__device_cuda;
    b->ops = &cuda_ops;
    b->ctx = ctx;
    b->kind = CONVOY_DEVICE_CUDA;
    b->index = global_index;
    snprintf(b->name, sizeof(b->name), "cuda%d", local_index);
    b->max_batch = 4096;
    b->launch_inline = 1;
    dev->ordinal = local_index;
    dev->sm_max_bytes = (size_t)convoy__param_int(p, "cuda_sm_max_bytes");
    dev->sm_min_copies = (int)convoy__param_int(p, "cuda_sm_min_copies");
    dev->sm_threads = (int)convoy__param_int(p, "cuda_sm_threads");
    dev->sm_block_bytes = (size_t)convoy__param_int(p, "cuda_sm_block_bytes");
    dev->ring_slots = (int)convoy__param_int(p, "cuda_desc_slots");

    /* The primary context is created here, on the init thread. */
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st != CONVOY_SUCCESS)
        goto err_free;
    int uva = 0, map = 0;
    struct cudaDeviceProp prop;
    size_t free_bytes = 0, total_bytes = 0;
    if ((st = CONVOY_CUDA_CALL(ctx, b->name, cudaGetDeviceProperties(&prop, dev->ordinal))) !=
            CONVOY_SUCCESS ||
        (st = CONVOY_CUDA_CALL(ctx, b->name,
                               cudaDeviceGetAttribute(&uva, cudaDevAttrUnifiedAddressing,
                                                      dev->ordinal))) != CONVOY_SUCCESS ||
        (st = CONVOY_CUDA_CALL(ctx, b->name,
                               cudaDeviceGetAttribute(&map, cudaDevAttrCanMapHostMemory,
                                                      dev->ordinal))) != CONVOY_SUCCESS ||
        (st = CONVOY_CUDA_CALL(ctx, b->name, cudaMemGetInfo(&free_bytes, &total_bytes))) !=
            CONVOY_SUCCESS)
        goto err_free;
    dev->sm_count = prop.multiProcessorCount;
    dev->can_map_host = uva && map;

    size_t want = (size_t)convoy__param_int(p, "cuda_memory");
    b->mem_capacity = want > 0 ? want : free_bytes / 10 * 9;
    if (want > free_bytes)
        convoy__log_warn("%s: cuda_memory is %zu bytes but only %zu are free; allocations past "
                         "that will fail as 'device full'",
                         b->name, want, free_bytes);
    b->methods = 1u << CONVOY__METHOD_LOOP;
#if CONVOY_HAVE_CUDA_BATCH
    b->methods |= 1u << CONVOY__METHOD_ENGINE;
#endif
    if (dev->can_map_host)
        b->methods |= 1u << CONVOY__METHOD_SM;
    else
        convoy__log_info("%s: no SM copy method: the device cannot map host memory (unified "
                         "addressing %d, can map host memory %d)",
                         b->name, uva, map);

    st = convoy__devpool_init(&dev->pool, b, &convoy__cuda_pool_ops,
                              (size_t)convoy__param_int(p, "cuda_pool_chunk"));
    if (st != CONVOY_SUCCESS)
        goto err_free;
    /* From here on cuda_close undoes whatever was done. */
    if ((st = convoy__cuda_copy_init(dev)) != CONVOY_SUCCESS)
        goto err_close;
    dev->hostmem = convoy__hostslab_attach(&convoy__cuda_hostslab_ops, ctx,
                                           (size_t)convoy__param_int(p, "cuda_host_slab"));
    if (dev->hostmem == NULL) {
        st = CONVOY_ERR_NOMEM;
        goto err_close;
    }

    convoy__log_info("%s: %s (sm_%d%d, %d SMs), %zu of %zu bytes free, capacity %zu, methods "
                     "%s%s%s",
                     b->name, prop.name, prop.major, prop.minor, dev->sm_count, free_bytes,
                     total_bytes, b->mem_capacity, "loop",
                     (b->methods >> CONVOY__METHOD_ENGINE) & 1u ? ", engine" : "",
                     (b->methods >> CONVOY__METHOD_SM) & 1u ? ", sm" : "");
    *dev_p = b;
    return CONVOY_SUCCESS;

err_close : {
    /* Keep the message through the teardown. */
    char msg[640];
    snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
    cuda_close(b);
    return convoy__error(ctx, st, "%s", msg);
}
err_free:
    free(dev);
    return st;
}

/* The pipeline has destroyed the streams and events and freed its device copies. */
static void cuda_close(convoy__device_t *d)
{
    if (d == NULL)
        return;
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    if (convoy__cuda_enter(dev) != CONVOY_SUCCESS)
        convoy__log_warn("%s: close: %s", d->name, convoy_last_error(NULL));
    convoy__cuda_copy_fini(dev);
    convoy__devpool_fini(&dev->pool);
    convoy__hostslab_detach(dev->hostmem);
    free(dev);
}

const convoy__device_component_t convoy__device_cuda = {
    .name = "cuda",
    .priority = 20,
    .kind = CONVOY_DEVICE_CUDA,
    .doc = "NVIDIA GPUs (CUDA runtime): pooled device memory, batched copy engines, SM copy "
           "kernel, pinned host slabs",
    .params = convoy__cuda_params,
    .query = cuda_query,
    .open = cuda_open,
    .close = cuda_close,
    .host_mem = &convoy__cuda_host_mem_ops,
};

/*
 * The CUDA device component: NVIDIA GPUs through the CUDA runtime API.
 *
 * This file holds the component alone: its table, query, open and close. The rest of
 * the component is one file per object (cuda_dev.h lists them); none of them needs
 * this one.
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

static const convoy__device_ops_t cuda_ops = {
    .mem_alloc = convoy__cuda_mem_alloc,
    .mem_free = convoy__cuda_mem_free,
    .stream_create = convoy__cuda_stream_create,
    .stream_destroy = convoy__cuda_stream_destroy,
    .stream_native = convoy__cuda_stream_native,
    .event_create = convoy__cuda_event_create,
    .event_destroy = convoy__cuda_event_destroy,
    .event_record = convoy__cuda_event_record,
    .event_record_quiet = convoy__cuda_event_record_quiet,
    .event_query = convoy__cuda_event_query,
    .stream_wait_event = convoy__cuda_stream_wait_event,
    .stream_sync = convoy__cuda_stream_sync,
    .memcpy = convoy__cuda_memcpy,
    .memcpy_multi = convoy__cuda_memcpy_multi,
    .launch = convoy__cuda_launch,
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
static int cuda_query(const convoy__params_t *params, char *why, size_t why_len)
{
    (void)params;
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
    b->errors_sticky = 1; /* a fault ends the context: every later call reports it */
    dev->ordinal = local_index;
    dev->sm_max_bytes = (size_t)convoy__param_int(p, "cuda_sm_max_bytes");
    dev->sm_min_copies = (int)convoy__param_int(p, "cuda_sm_min_copies");
    dev->sm_threads = (int)convoy__param_int(p, "cuda_sm_threads");
    dev->sm_block_bytes = (size_t)convoy__param_int(p, "cuda_sm_block_bytes");
    dev->ring_slots = (int)convoy__param_int(p, "cuda_desc_slots");
    dev->sm_desc_device = convoy__param_int(p, "cuda_sm_desc") == 1;
    dev->engine_max_copies = (int)convoy__param_int(p, "cuda_engine_max_copies");
    dev->engine_overlap = (int)convoy__param_int(p, "cuda_engine_overlap");

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
    convoy__cuda_events_init(dev, (int)convoy__param_int(p, "cuda_event_flags"));
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
    convoy__cuda_events_fini(dev);
    convoy__devpool_fini(&dev->pool);
    convoy__hostslab_detach(dev->hostmem);
    free(dev);
}

const convoy__device_component_t convoy__device_cuda = {
    .name = "cuda",
    .priority = CONVOY__CUDA_PRIORITY,
    .kind = CONVOY_DEVICE_CUDA,
    .doc = convoy__cuda_doc,
    .params = convoy__cuda_params,
    .query = cuda_query,
    .open = cuda_open,
    .close = cuda_close,
    .host_mem = &convoy__cuda_host_mem_ops,
};

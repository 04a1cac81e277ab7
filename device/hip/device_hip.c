/*
 * The HIP device component: AMD GPUs through the HIP runtime API, in plain C.
 *
 * This file holds the component alone: its table, query, open and close. The same
 * structure as the CUDA component (device/cuda/), smaller: hip_dev.h lists the files.
 *
 * Threads: as on CUDA, every op that talks to the device makes it current first.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/hip/hip_dev.h"
#include "src/context.h"

static const convoy__device_ops_t hip_ops = {
    .mem_alloc = convoy__hip_mem_alloc,
    .mem_free = convoy__hip_mem_free,
    .stream_create = convoy__hip_stream_create,
    .stream_destroy = convoy__hip_stream_destroy,
    .stream_native = convoy__hip_stream_native,
    .event_create = convoy__hip_event_create,
    .event_destroy = convoy__hip_event_destroy,
    .event_record = convoy__hip_event_record,
    .event_query = convoy__hip_event_query,
    .stream_wait_event = convoy__hip_stream_wait_event,
    .stream_sync = convoy__hip_stream_sync,
    .memcpy = convoy__hip_memcpy,
    .memcpy_multi = convoy__hip_memcpy_multi,
    .launch = convoy__hip_launch,
    .idle_wait = NULL,
};

/* ---- the component ----------------------------------------------------------------- */

/* hipGetDeviceCount: hipErrorNoDevice (100, n set to 0) without a GPU; any error means
 * no HIP here. */
static int hip_query(const convoy__params_t *params, char *why, size_t why_len)
{
    (void)params;
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
    convoy__hip_dev_t *dev = convoy__calloc(ctx, 1, sizeof(*dev), "a HIP device");
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
    convoy_status_t st = convoy__hip_enter(dev);
    if (st == CONVOY_SUCCESS)
        st = CONVOY_HIP_CALL(ctx, b->name, hipMemGetInfo(&free_bytes, &total_bytes));
    if (st != CONVOY_SUCCESS) {
        free(dev);
        return st;
    }
    size_t want = (size_t)convoy__param_int(p, "hip_memory");
    b->mem_capacity = want > 0 ? want : free_bytes / 10 * 9;

    st = convoy__devpool_init(&dev->pool, b, &convoy__hip_pool_ops,
                              (size_t)convoy__param_int(p, "hip_pool_chunk"));
    if (st != CONVOY_SUCCESS) {
        free(dev);
        return st;
    }
    convoy__hip_copy_init(dev);
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
    convoy__hip_dev_t *dev = convoy__hip_dev(d);
    if (convoy__hip_enter(dev) != CONVOY_SUCCESS)
        convoy__log_warn("%s: close: %s", d->name, convoy_last_error(NULL));
    convoy__devpool_fini(&dev->pool);
    convoy__hip_copy_fini(dev);
    convoy__hostslab_detach(dev->hostmem);
    free(dev);
}

const convoy__device_component_t convoy__device_hip = {
    .name = "hip",
    .priority = CONVOY__HIP_PRIORITY,
    .kind = CONVOY_DEVICE_HIP,
    .doc = convoy__hip_doc,
    .params = convoy__hip_params,
    .query = hip_query,
    .open = hip_open,
    .close = hip_close,
    .host_mem = &convoy__hip_host_mem_ops,
};

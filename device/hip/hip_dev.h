/*
 * The HIP device component's internal header. Plain C against <hip/hip_runtime_api.h>
 * with __HIP_PLATFORM_AMD__ (HIP_CPPFLAGS): no hipcc, no kernels. Internal to device/hip/.
 *
 *   device_hip.c   the component alone: its table, query, open, close
 *   hip_params.c   its parameters (hip_params.h: no HIP header, part of libconvoy even
 *                  when the component is a module)
 *   hip_err.c      the slow path of CONVOY_HIP_CALL, sticky errors
 *   hip_mem.c      device memory: the HIP calls under the pool of hipMalloc chunks
 *   hip_stream.c   streams, events, launches
 *   hip_copy.c     memcpy and memcpy_multi (loop, engine)
 *   hip_hostmem.c  pinned, mapped host slabs (convoy_host_alloc): the HIP calls
 *
 * The vendor-neutral parts are shared with the CUDA component, in device/: the pool
 * (devpool.h), the slabs (hostslab.h), the range allocator under both (arena.h), and
 * the checks and batch arrays of copies (copyargs.h).
 */
#ifndef CONVOY_HIP_DEV_H
#define CONVOY_HIP_DEV_H

#include <pthread.h>
#include <stddef.h>

#include <hip/hip_runtime_api.h>

#include "device/copyargs.h"
#include "device/device.h"
#include "device/devpool.h"
#include "device/hip/hip_params.h"
#include "device/hostslab.h"
#include "src/util.h"

extern const convoy__device_component_t convoy__device_hip;

/* ---- errors (hip_err.c) ------------------------------------------------------------- */

/* Non-zero for errors after which the HIP context is unusable (device faults). */
int convoy__hip_is_sticky(hipError_t rc);

/* The slow path of CONVOY_HIP_CALL: record CONVOY_ERR_DEVICE with "WHERE: CALL failed:
 * hipErrorName (code: text)", clear the last error unless sticky. */
convoy_status_t convoy__hip_fail(hipError_t rc, const char *call, convoy_context_t *ctx,
                                 const char *where);

static inline convoy_status_t convoy__hip_check(hipError_t rc, const char *call,
                                                convoy_context_t *ctx, const char *where)
{
    if (CONVOY__LIKELY(rc == hipSuccess))
        return CONVOY_SUCCESS;
    return convoy__hip_fail(rc, call, ctx, where);
}

/* Wrap every HIP runtime call (see CONVOY_CUDA_CALL): CONVOY_SUCCESS or CONVOY_ERR_DEVICE
 * recorded with the call's text, the error's name and WHERE ("hip0", or "hip"). */
#define CONVOY_HIP_CALL(ctx, where, call) convoy__hip_check((call), #call, (ctx), (where))

/* ---- the device --------------------------------------------------------------------- */

typedef struct convoy__hip_dev {
    convoy__device_t base;       /* first: what the pipeline sees */
    int ordinal;                 /* the HIP device number (hipSetDevice) */
    convoy__devpool_t pool;      /* device memory: hipMalloc chunks (hip_mem.c) */
    convoy__hostslab_t *hostmem; /* the context's pinned slabs (hip_hostmem.c) */
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_t eng_lock; /* the engine scratch (hip_copy.c) */
    convoy__copyargs_t eng;   /* the arrays of one hipMemcpyBatchAsync */
    int eng_no_attrs;         /* the runtime rejected attributes once (ROCm 7.2): pass none */
#endif
} convoy__hip_dev_t;

static inline convoy__hip_dev_t *convoy__hip_dev(convoy__device_t *d)
{
    return (convoy__hip_dev_t *)d;
}

/* Make the device current on the calling thread (every op but event_query starts with
 * it). */
static inline convoy_status_t convoy__hip_enter(convoy__hip_dev_t *dev)
{
    return CONVOY_HIP_CALL(dev->base.ctx, dev->base.name, hipSetDevice(dev->ordinal));
}

/* ---- memory (hip_mem.c, hip_hostmem.c) ---------------------------------------------- */

/* The HIP calls under the device pool and the pinned host slabs, and the host_mem ops. */
extern const convoy__devpool_ops_t convoy__hip_pool_ops;
extern const convoy__hostslab_ops_t convoy__hip_hostslab_ops;
extern const convoy__host_mem_ops_t convoy__hip_host_mem_ops;

convoy_status_t convoy__hip_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p);
void convoy__hip_mem_free(convoy__device_t *d, void *ptr);

/* ---- streams, events, launches (hip_stream.c) --------------------------------------- */

convoy_status_t convoy__hip_stream_create(convoy__device_t *d, convoy__stream_t **stream_p);
void convoy__hip_stream_destroy(convoy__device_t *d, convoy__stream_t *stream);
void *convoy__hip_stream_native(convoy__device_t *d, convoy__stream_t *stream);
convoy_status_t convoy__hip_event_create(convoy__device_t *d, convoy__event_t **event_p);
void convoy__hip_event_destroy(convoy__device_t *d, convoy__event_t *event);
convoy_status_t convoy__hip_event_record(convoy__device_t *d, convoy__event_t *event,
                                         convoy__stream_t *stream);
int convoy__hip_event_query(convoy__device_t *d, convoy__event_t *event);
convoy_status_t convoy__hip_stream_sync(convoy__device_t *d, convoy__stream_t *stream);
convoy_status_t convoy__hip_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                              convoy__event_t *event);
convoy_status_t convoy__hip_launch(convoy__device_t *d, convoy__stream_t *stream,
                                   convoy__launch_fn fn, void *arg);

/* ---- copies (hip_copy.c) ------------------------------------------------------------ */

/* The copy state of a device (the engine scratch and its lock): init before the first
 * copy, fini once the last has been enqueued. */
void convoy__hip_copy_init(convoy__hip_dev_t *dev);
void convoy__hip_copy_fini(convoy__hip_dev_t *dev);
convoy_status_t convoy__hip_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                   const convoy__copy_t *copy);
convoy_status_t convoy__hip_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                         const convoy__copy_t *copies, int n, int method,
                                         int *submitted_p, int *method_p);

#endif /* CONVOY_HIP_DEV_H */

/*
 * The CUDA device component's internal header: the device struct shared by its files,
 * the macro that wraps every CUDA runtime call, and the entry points each file offers
 * the others. Internal to device/cuda/.
 *
 *   device_cuda.c       the component alone: its table, query, open, close
 *   cuda_params.c       its parameters (cuda_params.h: no CUDA header, part of libconvoy
 *                       even when the component is a module)
 *   cuda_err.c          the slow path of CONVOY_CUDA_CALL, sticky errors
 *   cuda_mem.c          device memory: the CUDA calls under the pool of cudaMalloc chunks
 *   cuda_stream.c       streams, launches
 *   cuda_event.c        events, polled through flags the GPU writes
 *   cuda_copy.c         memcpy and memcpy_multi (loop, engine, sm, auto)
 *   cuda_copy_kernel.cu the SM copy kernel (cuda_kernel.h)
 *   cuda_hostmem.c      pinned, mapped host slabs (convoy_host_alloc): the CUDA calls
 *
 * The vendor-neutral parts are shared with the HIP component, in device/: the pool
 * (devpool.h), the slabs (hostslab.h), the range allocator under both (arena.h), and
 * the checks and batch arrays of copies (copyargs.h).
 */
#ifndef CONVOY_CUDA_DEV_H
#define CONVOY_CUDA_DEV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h> /* types and constants of the driver calls taken by entry point */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h> /* header-only: no library to link */

#include "device/copyargs.h"
#include "device/cuda/cuda_kernel.h"
#include "device/cuda/cuda_params.h"
#include "device/device.h"
#include "device/devpool.h"
#include "device/hostslab.h"
#include "src/util.h"

extern const convoy__device_component_t convoy__device_cuda;

/* ---- errors (cuda_err.c) ------------------------------------------------------------ */

/* Non-zero for the errors after which the CUDA context is unusable (faults on the
 * device: the process must end to use the GPU again); those cannot be cleared. */
int convoy__cuda_is_sticky(cudaError_t rc);

/* The slow path of CONVOY_CUDA_CALL: record CONVOY_ERR_DEVICE with "WHERE: CALL failed:
 * cudaErrorName (code: text)", clear the thread's last error unless rc is sticky, and
 * return CONVOY_ERR_DEVICE. */
convoy_status_t convoy__cuda_fail(cudaError_t rc, const char *call, convoy_context_t *ctx,
                                  const char *where);

static inline convoy_status_t convoy__cuda_check(cudaError_t rc, const char *call,
                                                 convoy_context_t *ctx, const char *where)
{
    if (CONVOY__LIKELY(rc == cudaSuccess))
        return CONVOY_SUCCESS;
    return convoy__cuda_fail(rc, call, ctx, where);
}

/*
 * Wrap every CUDA runtime call: CONVOY_SUCCESS, or CONVOY_ERR_DEVICE recorded with the
 * call's text, the error's name and WHERE (the device name, "cuda0", or "cuda" for
 * component-wide calls), the last error cleared when the error is not sticky.
 *   st = CONVOY_CUDA_CALL(ctx, dev->base.name, cudaStreamCreateWithFlags(&s, flags));
 */
#define CONVOY_CUDA_CALL(ctx, where, call) convoy__cuda_check((call), #call, (ctx), (where))

/* ---- memory (cuda_mem.c, cuda_hostmem.c) ------------------------------------------- */

/* The CUDA calls under the device pool and the pinned host slabs. */
extern const convoy__devpool_ops_t convoy__cuda_pool_ops;
extern const convoy__hostslab_ops_t convoy__cuda_hostslab_ops;
extern const convoy__host_mem_ops_t convoy__cuda_host_mem_ops;

/* ---- the device ------------------------------------------------------------------- */

/* A submission of the SM method still being read by its kernel: its descriptor slots
 * are reused once ev has completed. */
typedef struct convoy__cuda_sm_sub {
    cudaEvent_t ev;
    cudaStream_t stream; /* where ev was recorded; NULL once that stream is destroyed */
    int span; /* slots it holds, counting the ring's tail it skipped to stay contiguous */
    int done; /* ev known complete (a later submission of its stream completed) */
} convoy__cuda_sm_sub_t;

/* Events' flags (cuda_event.c). */
typedef struct convoy__cuda_flag_slot convoy__cuda_flag_slot_t;
typedef struct convoy__cuda_flag_page convoy__cuda_flag_page_t;
typedef CUresult (*convoy__cuda_write32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                            unsigned int flags);

typedef struct convoy__cuda_dev {
    convoy__device_t base; /* first: what the pipeline sees */
    int ordinal;           /* the CUDA device number (cudaSetDevice) */
    int sm_count;
    int can_map_host; /* kernels may read mapped pinned host memory (UVA, MapHost) */

    convoy__devpool_t pool;      /* device memory: cudaMalloc chunks (cuda_mem.c) */
    convoy__hostslab_t *hostmem; /* the context's pinned slabs (cuda_hostmem.c) */

    /* Copies (cuda_copy.c), under copy_lock (the progress thread is the only caller in
     * the pipeline; tests and benchmarks call from their own threads). */
    pthread_mutex_t copy_lock;
    convoy__copyargs_t eng;      /* engine scratch: the arrays of one cudaMemcpyBatchAsync */
    int engine_max_copies;       /* copies per cudaMemcpyBatchAsync (cuda_engine_max_copies) */
    int engine_overlap;          /* cudaMemcpyFlagPreferOverlapWithCompute on the batch call */
    convoy__cuda_desc_t *ring;   /* SM descriptors: mapped pinned host memory */
    void *ring_dev;              /* its device pointer */
    void *ring_devmem;           /* cuda_sm_desc=device: device memory the slots go to */
    int ring_slots;              /* capacity (cuda_desc_slots) */
    int ring_head;               /* the next slot to write */
    int ring_used;               /* slots held by submissions in flight */
    convoy__cuda_sm_sub_t *subs; /* in-flight SM submissions, a FIFO */
    int subs_cap, subs_first, subs_count;
    uint64_t subs_queries; /* their events asked of CUDA (tests) */
    size_t sm_max_bytes;   /* auto: SM when the mean copy is at most this */
    int sm_min_copies;     /* auto: ... and there are at least this many copies */
    int sm_threads;        /* threads per block */
    size_t sm_block_bytes; /* a copy gets one more block per this many bytes */
    int sm_desc_device;    /* cuda_sm_desc=device: the kernel reads a device copy */

    /* Events' flags (cuda_event.c): pages of mapped pinned memory and a free list of
     * their slots under flags_lock; the driver's cuStreamWriteValue32 (NULL: no flags). */
    pthread_mutex_t flags_lock;
    convoy__cuda_flag_page_t *flag_pages;
    convoy__cuda_flag_slot_t *free_slots;
    convoy__cuda_write32_fn write_flag;
    int flags_warned;      /* a flag could not be had or written: said once */
    uint64_t flag_answers; /* queries answered by a flag (tests, the debug log) */
    uint64_t flag_asked_ns; /* when CUDA was last asked about a short flag */
    uint64_t flag_asks;     /* those asks (tests) */
} convoy__cuda_dev_t;

static inline convoy__cuda_dev_t *convoy__cuda_dev(convoy__device_t *d)
{
    return (convoy__cuda_dev_t *)d;
}

/* Make the device current on the calling thread (every op starts with it: the progress
 * thread, the init thread and the program's threads all call ops). */
static inline convoy_status_t convoy__cuda_enter(convoy__cuda_dev_t *dev)
{
    return CONVOY_CUDA_CALL(dev->base.ctx, dev->base.name, cudaSetDevice(dev->ordinal));
}

/* cuda_mem.c: the mem_alloc and mem_free ops, on dev->pool */
convoy_status_t convoy__cuda_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p);
void convoy__cuda_mem_free(convoy__device_t *d, void *ptr);

/* cuda_copy.c */
convoy_status_t convoy__cuda_copy_init(convoy__cuda_dev_t *dev);
void convoy__cuda_copy_fini(convoy__cuda_dev_t *dev);
/* The SM submissions of stream s stop telling for each other (it is being destroyed:
 * its handle may come back as another stream's). */
void convoy__cuda_copy_forget_stream(convoy__cuda_dev_t *dev, cudaStream_t s);
convoy_status_t convoy__cuda_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                    const convoy__copy_t *copy);
convoy_status_t convoy__cuda_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                          const convoy__copy_t *copies, int n, int method,
                                          int *submitted_p, int *method_p);

/* cuda_stream.c: the stream and launch ops (device.h) */
convoy_status_t convoy__cuda_stream_create(convoy__device_t *d, convoy__stream_t **stream_p);
void convoy__cuda_stream_destroy(convoy__device_t *d, convoy__stream_t *stream);
void *convoy__cuda_stream_native(convoy__device_t *d, convoy__stream_t *stream);
convoy_status_t convoy__cuda_stream_sync(convoy__device_t *d, convoy__stream_t *stream);
convoy_status_t convoy__cuda_launch(convoy__device_t *d, convoy__stream_t *stream,
                                    convoy__launch_fn fn, void *arg);

/* cuda_event.c: the event ops (device.h); init takes the driver's write call when
 * want_flags (cuda_event_flags) asks for flags (without it, events go without: init
 * cannot fail), fini frees the flags' pages. */
void convoy__cuda_events_init(convoy__cuda_dev_t *dev, int want_flags);
void convoy__cuda_events_fini(convoy__cuda_dev_t *dev);
convoy_status_t convoy__cuda_event_create(convoy__device_t *d, convoy__event_t **event_p);
void convoy__cuda_event_destroy(convoy__device_t *d, convoy__event_t *event);
convoy_status_t convoy__cuda_event_record(convoy__device_t *d, convoy__event_t *event,
                                          convoy__stream_t *stream);
convoy_status_t convoy__cuda_event_record_quiet(convoy__device_t *d, convoy__event_t *event,
                                                convoy__stream_t *stream);
int convoy__cuda_event_query(convoy__device_t *d, convoy__event_t *event);
convoy_status_t convoy__cuda_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                               convoy__event_t *event);

static inline cudaStream_t convoy__cuda_stream(convoy__stream_t *s)
{
    return (cudaStream_t)(void *)s;
}

/* NVTX ranges around what convoy submits, so that Nsight Systems shows convoy's stages
 * (stage-in, pushout, launch) on the timeline; free when no tool is attached. */
static inline const char *convoy__cuda_stage_name(const convoy__copy_t *copy)
{
    return copy->dir == CONVOY__H2D   ? "convoy stage-in"
           : copy->dir == CONVOY__D2H ? "convoy pushout"
                                      : "convoy copy";
}

#endif /* CONVOY_CUDA_DEV_H */

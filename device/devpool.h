/*
 * Device memory of a GPU device, shared by the GPU components: a pool of large chunks
 * from the vendor's allocator (cudaMalloc, hipMalloc; the chunk-size parameter each, a
 * larger request getting a chunk of its own) grown on demand up to the device's capacity
 * (mem_capacity), cut by a first-fit allocator (arena.h) with 256-byte alignment.
 *
 * Why a pool: cudaMalloc costs tens of microseconds to milliseconds and cudaFree (as
 * hipFree) synchronizes the device, which would stall every stream of the pipeline each
 * time the LRU gives a copy back. Chunks are returned to the runtime at close, and empty
 * ones earlier only when a request finds the capacity all reserved (pool_trim).
 *
 * Freed memory is reusable at once, as after cudaFree: the pipeline frees a device copy
 * only when no enqueued work still uses it. Any thread may allocate and free (the
 * progress thread allocates; convoy_data_free on a program thread frees).
 *
 * Plain C: the vendor calls come in through convoy__devpool_ops_t (device/cuda/,
 * device/hip/). Internal to convoy.
 */
#ifndef CONVOY_DEVPOOL_H
#define CONVOY_DEVPOOL_H

#include <pthread.h>
#include <stddef.h>

#include "device/arena.h"
#include "device/device.h"

/* What a component gives its pools: its names for messages and its runtime's calls. */
typedef struct convoy__devpool_ops {
    const char *vendor;      /* the runtime in messages: "back to CUDA" */
    const char *malloc_name; /* its allocator in messages: "cudaMalloc" */
    /* Make dev current on the calling thread; errors recorded. */
    convoy_status_t (*enter)(convoy__device_t *dev);
    /* Allocate a chunk on dev (current): CONVOY_SUCCESS and *chunk_p; CONVOY_ERR_NOMEM,
     * not recorded, when the device is out of memory (the runtime's error cleared); any
     * other error recorded. */
    convoy_status_t (*chunk_alloc)(convoy__device_t *dev, size_t bytes, void **chunk_p);
    /* Free a chunk of dev; a failure is recorded without a context. */
    void (*chunk_free)(convoy__device_t *dev, void *chunk);
} convoy__devpool_ops_t;

/* A device's pool, embedded in the component's device struct. */
typedef struct convoy__devpool {
    convoy__device_t *dev;            /* the owner: name, ctx, mem_capacity */
    const convoy__devpool_ops_t *ops; /* the owner's component */
    pthread_mutex_t lock;             /* guards arena and peak: any thread may free */
    convoy__arena_t *arena;           /* regions: the chunks */
    size_t chunk;                     /* bytes per chunk (cuda_pool_chunk, hip_pool_chunk) */
    size_t peak;                      /* most bytes in use at once, for the close report */
} convoy__devpool_t;

/* An empty pool of chunk-byte chunks for dev. CONVOY_ERR_NOMEM (recorded) when out of
 * host memory; the pool then needs no fini. */
convoy_status_t convoy__devpool_init(convoy__devpool_t *pool, convoy__device_t *dev,
                                     const convoy__devpool_ops_t *ops, size_t chunk);
/* Give every chunk back (dev current when possible), reporting memory still allocated
 * at level info. Accepts a pool that init failed or never saw (zeroed). */
void convoy__devpool_fini(convoy__devpool_t *pool);

/* The mem_alloc and mem_free ops (device.h) of the pool's device. alloc: CONVOY_ERR_NOMEM
 * (recorded, not logged) when full. free: accepts NULL; a pointer the pool did not hand
 * out is logged and left alone. */
convoy_status_t convoy__devpool_alloc(convoy__devpool_t *pool, size_t bytes, void **ptr_p);
void convoy__devpool_free(convoy__devpool_t *pool, void *ptr);

/* 1 when [p, p + bytes) lies in one chunk of the pool (so a kernel may touch it); the
 * caller holds pool->lock (once for a whole submission). */
int convoy__devpool_contains_locked(convoy__devpool_t *pool, const void *p, size_t bytes);

/* The memory and chunk-size parameters of a component (cuda_memory, cuda_pool_chunk):
 * NAME and DOC are the component's, the type, default and bounds the same for all. */
#define CONVOY__DEVPOOL_MEMORY_PARAM(NAME, DOC)                                                    \
    {                                                                                              \
        .name = (NAME), .type = CONVOY__PARAM_SIZE, .def = "0", .min = 0,                          \
        .max = 1125899906842624.0, .doc = DOC                                                      \
    }
#define CONVOY__DEVPOOL_CHUNK_PARAM(NAME, DOC)                                                     \
    {                                                                                              \
        .name = (NAME), .type = CONVOY__PARAM_SIZE, .def = "256M", .min = 2097152.0,               \
        .max = 1099511627776.0, .doc = DOC                                                         \
    }

#endif /* CONVOY_DEVPOOL_H */

/*
 * Device memory of a CUDA device: a pool of large cudaMalloc chunks (cuda_pool_chunk
 * each; a larger request gets a chunk of its own) grown on demand up to the device's
 * capacity (cuda_memory), cut by a first-fit allocator with 256-byte alignment.
 *
 * Why a pool: cudaMalloc costs tens of microseconds to milliseconds and cudaFree
 * synchronizes the device, which would stall every stream of the pipeline each time the
 * LRU gives a copy back. Chunks are returned to CUDA at close, and empty ones earlier
 * only when a request finds the capacity all reserved (pool_trim).
 *
 * Freed memory is reusable at once, as after cudaFree: the pipeline frees a device copy
 * only when no enqueued work still uses it. Any thread may allocate and free (the
 * progress thread allocates; convoy_data_free on a program thread frees).
 */
#include "config.h"

#include <stdio.h>

#include "device/cuda/cuda_dev.h"

#define POOL_ALIGN 256             /* cudaMalloc's own alignment; enough for any vector type */
#define OWN_CHUNK_ROUND (2u << 20) /* a chunk of its own is a multiple of 2 MiB (large pages) */

convoy_status_t convoy__cuda_pool_init(convoy__cuda_dev_t *dev)
{
    dev->pool = convoy__arena_new(POOL_ALIGN);
    if (dev->pool == NULL)
        return convoy__error(dev->base.ctx, CONVOY_ERR_NOMEM,
                             "%s: out of host memory for the device pool", dev->base.name);
    pthread_mutex_init(&dev->pool_lock, NULL);
    return CONVOY_SUCCESS;
}

void convoy__cuda_pool_fini(convoy__cuda_dev_t *dev)
{
    if (dev->pool == NULL)
        return;
    size_t live = convoy__arena_live(dev->pool);
    if (live > 0)
        convoy__log_info("%s: closed with %zu bytes of device memory in use (%zu allocations)",
                         dev->base.name, convoy__arena_in_use(dev->pool), live);
    convoy__log_debug("%s: pool: %d chunks, %zu bytes reserved, peak use %zu bytes", dev->base.name,
                      convoy__arena_region_count(dev->pool), convoy__arena_reserved(dev->pool),
                      dev->pool_peak);
    for (int i = 0; i < convoy__arena_region_count(dev->pool); i++)
        CONVOY_CUDA_CALL(NULL, dev->base.name,
                         cudaFree(convoy__arena_region_at(dev->pool, i)->base));
    convoy__arena_destroy(dev->pool);
    dev->pool = NULL;
    pthread_mutex_destroy(&dev->pool_lock);
}

/* Give every empty chunk back to CUDA; the number given back. Under pool_lock. The last
 * resort of pool_grow when the capacity is all reserved in chunks too small or too
 * fragmented for a request: cudaFree waits for the whole device, so never otherwise. */
static int pool_trim(convoy__cuda_dev_t *dev)
{
    int n = 0;
    for (int i = convoy__arena_region_count(dev->pool) - 1; i >= 0; i--) {
        void *base;
        if (convoy__arena_remove(dev->pool, i, &base) == 0) {
            CONVOY_CUDA_CALL(NULL, dev->base.name, cudaFree(base));
            n++;
        }
    }
    if (n > 0)
        convoy__log_info("%s: gave %d empty pool chunks back to CUDA to make room", dev->base.name,
                         n);
    return n;
}

/* Add a chunk that can hold need bytes, giving empty chunks back first when the capacity
 * leaves no room. Under pool_lock. CONVOY_ERR_NOMEM when the capacity or the device is
 * exhausted. */
static convoy_status_t pool_grow(convoy__cuda_dev_t *dev, size_t need)
{
    convoy__device_t *b = &dev->base;
    size_t reserved = convoy__arena_reserved(dev->pool);
    if (b->mem_capacity - CONVOY__MIN(b->mem_capacity, reserved) < need) {
        convoy_status_t st = convoy__cuda_enter(dev);
        if (st != CONVOY_SUCCESS)
            return st;
        if (pool_trim(dev) > 0)
            reserved = convoy__arena_reserved(dev->pool);
    }
    size_t room = b->mem_capacity > reserved ? b->mem_capacity - reserved : 0;
    room &= ~(size_t)(POOL_ALIGN - 1);
    size_t size = need <= dev->pool_chunk
                      ? dev->pool_chunk
                      : (need + OWN_CHUNK_ROUND - 1) & ~(size_t)(OWN_CHUNK_ROUND - 1);
    if (size > room)
        size = room; /* the last chunk takes what the capacity leaves */
    if (size < need)
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                             "%s: device memory full: %zu bytes asked, %zu of %zu in use "
                             "(%zu reserved in %d chunks)",
                             b->name, need, convoy__arena_in_use(dev->pool), b->mem_capacity,
                             reserved, convoy__arena_region_count(dev->pool));
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    void *chunk = NULL;
    cudaError_t rc = cudaMalloc(&chunk, size);
    if (rc == cudaErrorMemoryAllocation) {
        /* Someone else holds the memory cuda_memory counted on: full, for the pipeline. */
        (void)cudaGetLastError();
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                             "%s: cudaMalloc of a %zu-byte chunk failed (out of memory) with "
                             "%zu bytes reserved of %zu",
                             b->name, size, reserved, b->mem_capacity);
    }
    if ((st = CONVOY_CUDA_CALL(b->ctx, b->name, rc)) != CONVOY_SUCCESS)
        return st;
    if (convoy__arena_add(dev->pool, chunk, size, NULL) != 0) {
        CONVOY_CUDA_CALL(NULL, b->name, cudaFree(chunk));
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for pool records",
                             b->name);
    }
    convoy__log_debug("%s: pool chunk of %zu bytes at %p (%zu reserved)", b->name, size, chunk,
                      reserved + size);
    return CONVOY_SUCCESS;
}

/* See device.h: CONVOY_ERR_NOMEM (recorded, not logged) when full. */
convoy_status_t convoy__cuda_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    if (ptr_p == NULL || bytes == 0)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: mem_alloc: %s", d->name,
                             ptr_p ? "0 bytes asked" : "NULL ptr_p");
    if (bytes > d->mem_capacity)
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                             "%s: mem_alloc: %zu bytes exceed the capacity, %zu bytes", d->name,
                             bytes, d->mem_capacity);
    size_t need = (bytes + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
    convoy_status_t st = CONVOY_SUCCESS;
    pthread_mutex_lock(&dev->pool_lock);
    void *p = NULL;
    if (convoy__arena_in_use(dev->pool) + need > d->mem_capacity)
        st = convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                           "%s: device memory full: %zu bytes asked, %zu of %zu in use", d->name,
                           bytes, convoy__arena_in_use(dev->pool), d->mem_capacity);
    else if ((p = convoy__arena_alloc(dev->pool, need)) == NULL &&
             (st = pool_grow(dev, need)) == CONVOY_SUCCESS &&
             (p = convoy__arena_alloc(dev->pool, need)) == NULL)
        st = convoy__error(d->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for pool records",
                           d->name);
    if (p != NULL && convoy__arena_in_use(dev->pool) > dev->pool_peak)
        dev->pool_peak = convoy__arena_in_use(dev->pool);
    pthread_mutex_unlock(&dev->pool_lock);
    if (st == CONVOY_SUCCESS)
        *ptr_p = p;
    return st;
}

/* Accepts NULL; a pointer the pool did not hand out is logged and left alone. */
void convoy__cuda_mem_free(convoy__device_t *d, void *ptr)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&dev->pool_lock);
    size_t size = convoy__arena_free(dev->pool, ptr);
    pthread_mutex_unlock(&dev->pool_lock);
    if (size == 0)
        convoy__log_error("%s: mem_free(%p): not a live allocation of this device", d->name, ptr);
}

int convoy__cuda_pool_contains_locked(convoy__cuda_dev_t *dev, const void *p, size_t bytes)
{
    return convoy__arena_find(dev->pool, p, bytes) != NULL;
}

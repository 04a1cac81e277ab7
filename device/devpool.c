/*
 * The device-memory pool of devpool.h: chunks, growth, trimming and the close report;
 * the vendor calls are the component's (pool->ops).
 */
#include "config.h"

#include <stdio.h>

#include "device/devpool.h"
#include "src/util.h"

#define POOL_ALIGN 256             /* cudaMalloc's own alignment; enough for any vector type */
#define OWN_CHUNK_ROUND (2u << 20) /* a chunk of its own is a multiple of 2 MiB (large pages) */

convoy_status_t convoy__devpool_init(convoy__devpool_t *pool, convoy__device_t *dev,
                                     const convoy__devpool_ops_t *ops, size_t chunk)
{
    pool->dev = dev;
    pool->ops = ops;
    pool->chunk = chunk;
    pool->peak = 0;
    pool->arena = convoy__arena_new(POOL_ALIGN);
    if (pool->arena == NULL)
        return convoy__error(dev->ctx, CONVOY_ERR_NOMEM,
                             "%s: out of host memory for the device pool", dev->name);
    pthread_mutex_init(&pool->lock, NULL);
    return CONVOY_SUCCESS;
}

void convoy__devpool_fini(convoy__devpool_t *pool)
{
    if (pool->arena == NULL)
        return;
    const char *name = pool->dev->name;
    size_t live = convoy__arena_live(pool->arena);
    if (live > 0)
        convoy__log_info("%s: closed with %zu bytes of device memory in use (%zu allocations)",
                         name, convoy__arena_in_use(pool->arena), live);
    convoy__log_debug("%s: pool: %d chunks, %zu bytes reserved, peak use %zu bytes", name,
                      convoy__arena_region_count(pool->arena), convoy__arena_reserved(pool->arena),
                      pool->peak);
    for (int i = 0; i < convoy__arena_region_count(pool->arena); i++)
        pool->ops->chunk_free(pool->dev, convoy__arena_region_at(pool->arena, i)->base);
    convoy__arena_destroy(pool->arena);
    pool->arena = NULL;
    pthread_mutex_destroy(&pool->lock);
}

/* Give every empty chunk back to the runtime; the number given back. Under pool->lock.
 * The last resort of pool_grow when the capacity is all reserved in chunks too small or
 * too fragmented for a request: freeing waits for the whole device, so never otherwise. */
static int pool_trim(convoy__devpool_t *pool)
{
    int n = 0;
    for (int i = convoy__arena_region_count(pool->arena) - 1; i >= 0; i--) {
        void *base;
        if (convoy__arena_remove(pool->arena, i, &base) == 0) {
            pool->ops->chunk_free(pool->dev, base);
            n++;
        }
    }
    if (n > 0)
        convoy__log_info("%s: gave %d empty pool chunks back to %s to make room", pool->dev->name,
                         n, pool->ops->vendor);
    return n;
}

/* Add a chunk that can hold need bytes, giving empty chunks back first when the capacity
 * leaves no room. Under pool->lock. CONVOY_ERR_NOMEM when the capacity or the device is
 * exhausted. */
static convoy_status_t pool_grow(convoy__devpool_t *pool, size_t need)
{
    convoy__device_t *b = pool->dev;
    size_t reserved = convoy__arena_reserved(pool->arena);
    if (b->mem_capacity - CONVOY__MIN(b->mem_capacity, reserved) < need) {
        convoy_status_t st = pool->ops->enter(b);
        if (st != CONVOY_SUCCESS)
            return st;
        if (pool_trim(pool) > 0)
            reserved = convoy__arena_reserved(pool->arena);
    }
    size_t room = b->mem_capacity > reserved ? b->mem_capacity - reserved : 0;
    room &= ~(size_t)(POOL_ALIGN - 1);
    size_t size = need <= pool->chunk
                      ? pool->chunk
                      : (need + OWN_CHUNK_ROUND - 1) & ~(size_t)(OWN_CHUNK_ROUND - 1);
    if (size > room)
        size = room; /* the last chunk takes what the capacity leaves */
    if (size < need)
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                             "%s: device memory full: %zu bytes asked, %zu of %zu in use "
                             "(%zu reserved in %d chunks)",
                             b->name, need, convoy__arena_in_use(pool->arena), b->mem_capacity,
                             reserved, convoy__arena_region_count(pool->arena));
    convoy_status_t st = pool->ops->enter(b);
    if (st != CONVOY_SUCCESS)
        return st;
    void *chunk = NULL;
    st = pool->ops->chunk_alloc(b, size, &chunk);
    if (st == CONVOY_ERR_NOMEM) {
        /* Someone else holds the memory the capacity counted on: full, for the pipeline. */
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM,
                             "%s: %s of a %zu-byte chunk failed (out of memory) with "
                             "%zu bytes reserved of %zu",
                             b->name, pool->ops->malloc_name, size, reserved, b->mem_capacity);
    }
    if (st != CONVOY_SUCCESS)
        return st;
    if (convoy__arena_add(pool->arena, chunk, size, NULL) != 0) {
        pool->ops->chunk_free(b, chunk);
        return convoy__error(b->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for pool records",
                             b->name);
    }
    convoy__log_debug("%s: pool chunk of %zu bytes at %p (%zu reserved)", b->name, size, chunk,
                      reserved + size);
    return CONVOY_SUCCESS;
}

convoy_status_t convoy__devpool_alloc(convoy__devpool_t *pool, size_t bytes, void **ptr_p)
{
    convoy__device_t *d = pool->dev;
    if (ptr_p == NULL || bytes == 0)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: mem_alloc: %s", d->name,
                             ptr_p ? "0 bytes asked" : "NULL ptr_p");
    if (bytes > d->mem_capacity)
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                             "%s: mem_alloc: %zu bytes exceed the capacity, %zu bytes", d->name,
                             bytes, d->mem_capacity);
    size_t need = (bytes + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
    convoy_status_t st = CONVOY_SUCCESS;
    pthread_mutex_lock(&pool->lock);
    void *p = NULL;
    if (convoy__arena_in_use(pool->arena) + need > d->mem_capacity)
        st = convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                           "%s: device memory full: %zu bytes asked, %zu of %zu in use", d->name,
                           bytes, convoy__arena_in_use(pool->arena), d->mem_capacity);
    else if ((p = convoy__arena_alloc(pool->arena, need)) == NULL &&
             (st = pool_grow(pool, need)) == CONVOY_SUCCESS &&
             (p = convoy__arena_alloc(pool->arena, need)) == NULL)
        st = convoy__error(d->ctx, CONVOY_ERR_NOMEM, "%s: out of host memory for pool records",
                           d->name);
    if (p != NULL && convoy__arena_in_use(pool->arena) > pool->peak)
        pool->peak = convoy__arena_in_use(pool->arena);
    pthread_mutex_unlock(&pool->lock);
    if (st == CONVOY_SUCCESS)
        *ptr_p = p;
    return st;
}

void convoy__devpool_free(convoy__devpool_t *pool, void *ptr)
{
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&pool->lock);
    size_t size = convoy__arena_free(pool->arena, ptr);
    pthread_mutex_unlock(&pool->lock);
    if (size == 0)
        convoy__log_error("%s: mem_free(%p): not a live allocation of this device", pool->dev->name,
                          ptr);
}

int convoy__devpool_contains_locked(convoy__devpool_t *pool, const void *p, size_t bytes)
{
    return convoy__arena_find(pool->arena, p, bytes) != NULL;
}

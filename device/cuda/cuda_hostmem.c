/*
 * Pinned host memory for convoy_host_alloc: large slabs from cudaHostAlloc (mapped, so
 * that the SM copy kernel can reach them; portable, so that every device can), cut by a
 * first-fit allocator with 64-byte alignment. Registration costs 0.3-4 ms per call
 * (PHYSICS.md s2), so memory is pinned a slab at a time, never per block.
 *
 * The state belongs to a context and is shared by the context's CUDA devices: the first
 * device opened creates it, the last one closed frees every slab (a small registry keyed
 * by the context, because host_mem ops receive only the context). Every entry point may
 * be called from any thread: the program's threads allocate, free and ask is_pinned.
 *
 * Slabs are kept until the last device closes, even when empty: cudaFreeHost may wait
 * for the device, which the progress thread must never do in the middle of work.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda/cuda_dev.h"

#define HOST_ALIGN 64 /* as convoy_host_alloc promises (cache line) */
#define OWN_SLAB_ROUND                                                                             \
    (2u << 20) /* a block larger than a slab gets a slab of its own, a                             \
                  multiple of 2 MiB */

struct convoy__cuda_hostmem {
    convoy_context_t *ctx;
    int refs;                     /* open CUDA devices of ctx; under registry_lock */
    size_t slab_bytes;            /* cuda_host_slab */
    pthread_mutex_t lock;         /* guards arena and peak */
    convoy__arena_t *arena;       /* regions: slabs, tagged with their device pointer */
    size_t peak;                  /* most bytes allocated at once */
    convoy__cuda_hostmem_t *next; /* the registry */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static convoy__cuda_hostmem_t *registry;

static convoy__cuda_hostmem_t *hostmem_of(const convoy_context_t *ctx)
{
    pthread_mutex_lock(&registry_lock);
    convoy__cuda_hostmem_t *hm = registry;
    while (hm != NULL && hm->ctx != ctx)
        hm = hm->next;
    pthread_mutex_unlock(&registry_lock);
    return hm;
}

convoy__cuda_hostmem_t *convoy__cuda_hostmem_attach(convoy_context_t *ctx, size_t slab_bytes)
{
    pthread_mutex_lock(&registry_lock);
    convoy__cuda_hostmem_t *hm = registry;
    while (hm != NULL && hm->ctx != ctx)
        hm = hm->next;
    if (hm != NULL) {
        hm->refs++;
        pthread_mutex_unlock(&registry_lock);
        return hm;
    }
    hm = calloc(1, sizeof(*hm));
    if (hm != NULL && (hm->arena = convoy__arena_new(HOST_ALIGN)) == NULL) {
        free(hm);
        hm = NULL;
    }
    if (hm == NULL) {
        pthread_mutex_unlock(&registry_lock);
        convoy__error(ctx, CONVOY_ERR_NOMEM, "cuda: out of memory for the pinned-slab state");
        return NULL;
    }
    hm->ctx = ctx;
    hm->refs = 1;
    hm->slab_bytes = slab_bytes;
    pthread_mutex_init(&hm->lock, NULL);
    hm->next = registry;
    registry = hm;
    pthread_mutex_unlock(&registry_lock);
    return hm;
}

void convoy__cuda_hostmem_detach(convoy__cuda_hostmem_t *hm)
{
    if (hm == NULL)
        return;
    pthread_mutex_lock(&registry_lock);
    int last = --hm->refs == 0;
    if (last) {
        convoy__cuda_hostmem_t **pp = &registry;
        while (*pp != hm)
            pp = &(*pp)->next;
        *pp = hm->next;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!last)
        return;

    size_t live = convoy__arena_live(hm->arena);
    int nslabs = convoy__arena_region_count(hm->arena);
    if (live > 0)
        convoy__log_info("cuda: %zu blocks of convoy_host_alloc (%zu bytes) were not freed "
                         "before fini; freeing their slabs",
                         live, convoy__arena_in_use(hm->arena));
    convoy__log_debug("cuda: freeing %d pinned slabs (%zu bytes, peak use %zu bytes)", nslabs,
                      convoy__arena_reserved(hm->arena), hm->peak);
    for (int i = 0; i < nslabs; i++) {
        const convoy__arena_region_t *r = convoy__arena_region_at(hm->arena, i);
        CONVOY_CUDA_CALL(NULL, "cuda", cudaFreeHost(r->base));
    }
    convoy__arena_destroy(hm->arena);
    pthread_mutex_destroy(&hm->lock);
    free(hm);
}

void convoy__cuda_hostmem_lock(convoy__cuda_hostmem_t *hm)
{
    pthread_mutex_lock(&hm->lock);
}

void convoy__cuda_hostmem_unlock(convoy__cuda_hostmem_t *hm)
{
    pthread_mutex_unlock(&hm->lock);
}

int convoy__cuda_hostmem_map_locked(convoy__cuda_hostmem_t *hm, const void *p, size_t bytes,
                                    void **dev_p)
{
    const convoy__arena_region_t *r = convoy__arena_find(hm->arena, p, bytes);
    if (r == NULL)
        return 0;
    *dev_p = (char *)r->tag + ((uintptr_t)p - (uintptr_t)r->base);
    return 1;
}

/* Whether [p, p + bytes) outside the slabs is pinned: both ends registered host memory
 * (the program's cudaHostAlloc or cudaHostRegister). Errors (there should be none since
 * CUDA 11: plain memory reads as cudaMemoryTypeUnregistered) mean "not pinned" and are
 * cleared. */
static int foreign_pinned(const void *p, size_t bytes)
{
    const void *ends[2] = {p, (const char *)p + bytes - 1};
    for (int e = 0; e < (bytes > 1 ? 2 : 1); e++) {
        struct cudaPointerAttributes a;
        if (cudaPointerGetAttributes(&a, ends[e]) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        if (a.type != cudaMemoryTypeHost)
            return 0;
    }
    return 1;
}

/* ---- host_mem ops ------------------------------------------------------------------ */

static void *cuda_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    convoy__cuda_hostmem_t *hm = hostmem_of(ctx);
    if (hm == NULL) {
        convoy__error(ctx, CONVOY_ERR_STATE, "convoy_host_alloc: no CUDA device is open");
        return NULL;
    }
    if (bytes == 0 || bytes > SIZE_MAX / 2) {
        convoy__error(ctx, bytes ? CONVOY_ERR_NOMEM : CONVOY_ERR_INVALID,
                      "convoy_host_alloc: %zu bytes cannot be allocated", bytes);
        return NULL;
    }
    pthread_mutex_lock(&hm->lock);
    void *p = convoy__arena_alloc(hm->arena, bytes);
    if (p == NULL) {
        size_t rounded = (bytes + HOST_ALIGN - 1) & ~(size_t)(HOST_ALIGN - 1);
        size_t size = rounded <= hm->slab_bytes
                          ? hm->slab_bytes
                          : (rounded + OWN_SLAB_ROUND - 1) & ~(size_t)(OWN_SLAB_ROUND - 1);
        void *base = NULL, *dbase = NULL;
        convoy_status_t st = CONVOY_CUDA_CALL(
            ctx, "cuda", cudaHostAlloc(&base, size, cudaHostAllocMapped | cudaHostAllocPortable));
        if (st == CONVOY_SUCCESS) {
            st = CONVOY_CUDA_CALL(ctx, "cuda", cudaHostGetDevicePointer(&dbase, base, 0));
            if (st == CONVOY_SUCCESS && convoy__arena_add(hm->arena, base, size, dbase) != 0)
                st = convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory for slab records");
            if (st != CONVOY_SUCCESS)
                CONVOY_CUDA_CALL(NULL, "cuda", cudaFreeHost(base));
        }
        if (st != CONVOY_SUCCESS) {
            pthread_mutex_unlock(&hm->lock);
            char why[512];
            snprintf(why, sizeof(why), "%s", convoy_last_error(NULL));
            convoy__error(ctx, CONVOY_ERR_NOMEM,
                          "convoy_host_alloc: no pinned slab of %zu bytes for a block of %zu "
                          "bytes: %s",
                          size, bytes, why);
            return NULL;
        }
        convoy__log_debug("cuda: new pinned slab of %zu bytes at %p (device %p)", size, base,
                          dbase);
        p = convoy__arena_alloc(hm->arena, bytes);
    }
    size_t used = convoy__arena_in_use(hm->arena);
    if (used > hm->peak)
        hm->peak = used;
    pthread_mutex_unlock(&hm->lock);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_host_alloc: out of host memory for %zu bytes",
                      bytes);
    return p;
}

static void cuda_host_free(convoy_context_t *ctx, void *ptr)
{
    convoy__cuda_hostmem_t *hm = hostmem_of(ctx);
    if (hm == NULL || ptr == NULL)
        return;
    pthread_mutex_lock(&hm->lock);
    size_t size = convoy__arena_free(hm->arena, ptr);
    pthread_mutex_unlock(&hm->lock);
    if (size == 0)
        convoy__log_error("convoy_host_free(%p): not a block from convoy_host_alloc (ignored)",
                          ptr);
}

static int cuda_host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return 0;
    if (bytes == 0)
        bytes = 1;
    convoy__cuda_hostmem_t *hm = hostmem_of(ctx);
    if (hm != NULL) {
        pthread_mutex_lock(&hm->lock);
        int in_slab = convoy__arena_find(hm->arena, ptr, bytes) != NULL;
        pthread_mutex_unlock(&hm->lock);
        if (in_slab)
            return 1;
    }
    return foreign_pinned(ptr, bytes);
}

const convoy__host_mem_ops_t convoy__cuda_host_mem_ops = {
    .alloc = cuda_host_alloc,
    .free = cuda_host_free,
    .is_pinned = cuda_host_is_pinned,
};

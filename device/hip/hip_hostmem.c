/*
 * Pinned host memory for convoy_host_alloc on HIP: slabs from hipHostMalloc (mapped and
 * portable) cut by a first-fit allocator with 64-byte alignment, as on CUDA
 * (cuda_hostmem.c says why: pinning costs milliseconds per call, PHYSICS.md s2).
 *
 * The state belongs to a context and is shared by its HIP devices through a small
 * registry keyed by the context; the last device closed frees the slabs (hipHostFree
 * synchronizes the device, so never earlier). Every entry point may be called from any
 * thread.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "device/hip/hip_dev.h"

#define HOST_ALIGN 64
#define OWN_SLAB_ROUND (2u << 20) /* a block larger than a slab gets its own, 2 MiB multiple */

struct convoy__hip_hostmem {
    convoy_context_t *ctx;
    int refs;               /* open HIP devices of ctx; under registry_lock */
    size_t slab_bytes;      /* hip_host_slab */
    pthread_mutex_t lock;   /* guards arena */
    convoy__arena_t *arena; /* regions: slabs */
    convoy__hip_hostmem_t *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static convoy__hip_hostmem_t *registry;

static convoy__hip_hostmem_t *hostmem_of(const convoy_context_t *ctx)
{
    pthread_mutex_lock(&registry_lock);
    convoy__hip_hostmem_t *hm = registry;
    while (hm != NULL && hm->ctx != ctx)
        hm = hm->next;
    pthread_mutex_unlock(&registry_lock);
    return hm;
}

convoy__hip_hostmem_t *convoy__hip_hostmem_attach(convoy_context_t *ctx, size_t slab_bytes)
{
    pthread_mutex_lock(&registry_lock);
    convoy__hip_hostmem_t *hm = registry;
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
        convoy__error(ctx, CONVOY_ERR_NOMEM, "hip: out of memory for the pinned-slab state");
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

void convoy__hip_hostmem_detach(convoy__hip_hostmem_t *hm)
{
    if (hm == NULL)
        return;
    pthread_mutex_lock(&registry_lock);
    int last = --hm->refs == 0;
    if (last) {
        convoy__hip_hostmem_t **pp = &registry;
        while (*pp != hm)
            pp = &(*pp)->next;
        *pp = hm->next;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!last)
        return;
    if (convoy__arena_live(hm->arena) > 0)
        convoy__log_info("hip: %zu blocks of convoy_host_alloc (%zu bytes) were not freed "
                         "before fini; freeing their slabs",
                         convoy__arena_live(hm->arena), convoy__arena_in_use(hm->arena));
    for (int i = 0; i < convoy__arena_region_count(hm->arena); i++)
        CONVOY_HIP_CALL(NULL, "hip", hipHostFree(convoy__arena_region_at(hm->arena, i)->base));
    convoy__arena_destroy(hm->arena);
    pthread_mutex_destroy(&hm->lock);
    free(hm);
}

static void *hip_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    convoy__hip_hostmem_t *hm = hostmem_of(ctx);
    if (hm == NULL) {
        convoy__error(ctx, CONVOY_ERR_STATE, "convoy_host_alloc: no HIP device is open");
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
        void *base = NULL;
        convoy_status_t st = CONVOY_HIP_CALL(
            ctx, "hip", hipHostMalloc(&base, size, hipHostMallocMapped | hipHostMallocPortable));
        if (st == CONVOY_SUCCESS && convoy__arena_add(hm->arena, base, size, NULL) != 0) {
            CONVOY_HIP_CALL(NULL, "hip", hipHostFree(base));
            st = convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory for slab records");
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
        p = convoy__arena_alloc(hm->arena, bytes);
    }
    pthread_mutex_unlock(&hm->lock);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_host_alloc: out of host memory for %zu bytes",
                      bytes);
    return p;
}

static void hip_host_free(convoy_context_t *ctx, void *ptr)
{
    convoy__hip_hostmem_t *hm = hostmem_of(ctx);
    if (hm == NULL || ptr == NULL)
        return;
    pthread_mutex_lock(&hm->lock);
    size_t size = convoy__arena_free(hm->arena, ptr);
    pthread_mutex_unlock(&hm->lock);
    if (size == 0)
        convoy__log_error("convoy_host_free(%p): not a block from convoy_host_alloc (ignored)",
                          ptr);
}

/* Outside the slabs, ask the runtime about both ends. Before ROCm 6 plain memory is an
 * error (hipErrorInvalidValue) and hipMemoryTypeHost is 0; ROCm 6 renamed the field
 * memoryType to type and answers hipMemoryTypeUnregistered instead. */
static int foreign_pinned(const void *p)
{
    hipPointerAttribute_t a;
    if (hipPointerGetAttributes(&a, p) != hipSuccess) {
        (void)hipGetLastError();
        return 0;
    }
#if HIP_VERSION_MAJOR >= 6
    return a.type == hipMemoryTypeHost;
#else
    return a.memoryType == hipMemoryTypeHost;
#endif
}

static int hip_host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return 0;
    if (bytes == 0)
        bytes = 1;
    convoy__hip_hostmem_t *hm = hostmem_of(ctx);
    if (hm != NULL) {
        pthread_mutex_lock(&hm->lock);
        int in_slab = convoy__arena_find(hm->arena, ptr, bytes) != NULL;
        pthread_mutex_unlock(&hm->lock);
        if (in_slab)
            return 1;
    }
    return foreign_pinned(ptr) && foreign_pinned((const char *)ptr + bytes - 1);
}

const convoy__host_mem_ops_t convoy__hip_host_mem_ops = {
    .alloc = hip_host_alloc,
    .free = hip_host_free,
    .is_pinned = hip_host_is_pinned,
};

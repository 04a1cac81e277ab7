/*
 * The pinned host slabs of hostslab.h: the registry of per-context states and the
 * sub-allocation of slabs; the vendor calls are the component's (ops).
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "device/arena.h"
#include "device/hostslab.h"
#include "src/util.h"

#define HOST_ALIGN 64 /* as convoy_host_alloc promises (cache line) */
#define OWN_SLAB_ROUND                                                                             \
    (2u << 20) /* a block larger than a slab gets a slab of its own, a                             \
                  multiple of 2 MiB */

struct convoy__hostslab {
    const convoy__hostslab_ops_t *ops; /* the component; with ctx, the registry's key */
    convoy_context_t *ctx;
    int refs;                 /* open devices of the component in ctx; under registry_lock */
    size_t slab_bytes;        /* cuda_host_slab, hip_host_slab */
    pthread_mutex_t lock;     /* guards arena and peak */
    convoy__arena_t *arena;   /* regions: slabs, tagged with their device pointer */
    size_t peak;              /* most bytes allocated at once */
    convoy__hostslab_t *next; /* the registry */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static convoy__hostslab_t *registry;

static convoy__hostslab_t *hostslab_of(const convoy__hostslab_ops_t *ops,
                                       const convoy_context_t *ctx)
{
    pthread_mutex_lock(&registry_lock);
    convoy__hostslab_t *hs = registry;
    while (hs != NULL && (hs->ctx != ctx || hs->ops != ops))
        hs = hs->next;
    pthread_mutex_unlock(&registry_lock);
    return hs;
}

convoy__hostslab_t *convoy__hostslab_attach(const convoy__hostslab_ops_t *ops,
                                            convoy_context_t *ctx, size_t slab_bytes)
{
    pthread_mutex_lock(&registry_lock);
    convoy__hostslab_t *hs = registry;
    while (hs != NULL && (hs->ctx != ctx || hs->ops != ops))
        hs = hs->next;
    if (hs != NULL) {
        hs->refs++;
        pthread_mutex_unlock(&registry_lock);
        return hs;
    }
    hs = calloc(1, sizeof(*hs));
    if (hs != NULL && (hs->arena = convoy__arena_new(HOST_ALIGN)) == NULL) {
        free(hs);
        hs = NULL;
    }
    if (hs == NULL) {
        pthread_mutex_unlock(&registry_lock);
        convoy__error(ctx, CONVOY_ERR_NOMEM, "%s: out of memory for the pinned-slab state",
                      ops->name);
        return NULL;
    }
    hs->ops = ops;
    hs->ctx = ctx;
    hs->refs = 1;
    hs->slab_bytes = slab_bytes;
    pthread_mutex_init(&hs->lock, NULL);
    hs->next = registry;
    registry = hs;
    pthread_mutex_unlock(&registry_lock);
    return hs;
}

void convoy__hostslab_detach(convoy__hostslab_t *hs)
{
    if (hs == NULL)
        return;
    pthread_mutex_lock(&registry_lock);
    int last = --hs->refs == 0;
    if (last) {
        convoy__hostslab_t **pp = &registry;
        while (*pp != hs)
            pp = &(*pp)->next;
        *pp = hs->next;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!last)
        return;

    const char *name = hs->ops->name;
    size_t live = convoy__arena_live(hs->arena);
    int nslabs = convoy__arena_region_count(hs->arena);
    if (live > 0)
        convoy__log_info("%s: %zu blocks of convoy_host_alloc (%zu bytes) were not freed "
                         "before fini; freeing their slabs",
                         name, live, convoy__arena_in_use(hs->arena));
    convoy__log_debug("%s: freeing %d pinned slabs (%zu bytes, peak use %zu bytes)", name, nslabs,
                      convoy__arena_reserved(hs->arena), hs->peak);
    for (int i = 0; i < nslabs; i++) {
        const convoy__arena_region_t *r = convoy__arena_region_at(hs->arena, i);
        hs->ops->slab_free(r->base);
    }
    convoy__arena_destroy(hs->arena);
    pthread_mutex_destroy(&hs->lock);
    free(hs);
}

const convoy__arena_t *convoy__hostslab_lock(convoy__hostslab_t *hs)
{
    pthread_mutex_lock(&hs->lock);
    return hs->arena;
}

void convoy__hostslab_unlock(convoy__hostslab_t *hs)
{
    pthread_mutex_unlock(&hs->lock);
}

/* ---- host_mem ops ------------------------------------------------------------------ */

void *convoy__hostslab_alloc(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx, size_t bytes)
{
    convoy__hostslab_t *hs = hostslab_of(ops, ctx);
    if (hs == NULL) {
        convoy__error(ctx, CONVOY_ERR_STATE, "convoy_host_alloc: no %s device is open",
                      ops->vendor);
        return NULL;
    }
    if (bytes == 0 || bytes > SIZE_MAX / 2) {
        convoy__error(ctx, bytes ? CONVOY_ERR_NOMEM : CONVOY_ERR_INVALID,
                      "convoy_host_alloc: %zu bytes cannot be allocated", bytes);
        return NULL;
    }
    pthread_mutex_lock(&hs->lock);
    void *p = convoy__arena_alloc(hs->arena, bytes);
    if (p == NULL) {
        size_t rounded = (bytes + HOST_ALIGN - 1) & ~(size_t)(HOST_ALIGN - 1);
        size_t size = rounded <= hs->slab_bytes
                          ? hs->slab_bytes
                          : (rounded + OWN_SLAB_ROUND - 1) & ~(size_t)(OWN_SLAB_ROUND - 1);
        void *base = NULL, *dbase = NULL;
        convoy_status_t st = ops->slab_alloc(ctx, size, &base, &dbase);
        if (st == CONVOY_SUCCESS && convoy__arena_add(hs->arena, base, size, dbase) != 0) {
            st = convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory for slab records");
            ops->slab_free(base);
        }
        if (st != CONVOY_SUCCESS) {
            pthread_mutex_unlock(&hs->lock);
            char why[512];
            snprintf(why, sizeof(why), "%s", convoy_last_error(NULL));
            convoy__error(ctx, CONVOY_ERR_NOMEM,
                          "convoy_host_alloc: no pinned slab of %zu bytes for a block of %zu "
                          "bytes: %s",
                          size, bytes, why);
            return NULL;
        }
        convoy__log_debug("%s: new pinned slab of %zu bytes at %p (device %p)", ops->name, size,
                          base, dbase);
        p = convoy__arena_alloc(hs->arena, bytes);
    }
    size_t used = convoy__arena_in_use(hs->arena);
    if (used > hs->peak)
        hs->peak = used;
    pthread_mutex_unlock(&hs->lock);
    if (p == NULL)
        convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_host_alloc: out of host memory for %zu bytes",
                      bytes);
    return p;
}

void convoy__hostslab_free(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx, void *ptr)
{
    convoy__hostslab_t *hs = hostslab_of(ops, ctx);
    if (hs == NULL || ptr == NULL)
        return;
    pthread_mutex_lock(&hs->lock);
    size_t size = convoy__arena_free(hs->arena, ptr);
    pthread_mutex_unlock(&hs->lock);
    if (size == 0)
        convoy__log_error("convoy_host_free(%p): not a block from convoy_host_alloc (ignored)",
                          ptr);
}

void *convoy__hostslab_device_ptr(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx,
                                  const void *ptr, size_t bytes)
{
    convoy__hostslab_t *hs = ptr != NULL ? hostslab_of(ops, ctx) : NULL;
    if (hs == NULL)
        return NULL;
    void *dev = NULL;
    const convoy__arena_t *slabs = convoy__hostslab_lock(hs);
    if (!convoy__hostslab_map_locked(slabs, ptr, bytes > 0 ? bytes : 1, &dev, NULL))
        dev = NULL;
    convoy__hostslab_unlock(hs);
    return dev;
}

int convoy__hostslab_is_pinned(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx,
                               const void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return 0;
    if (bytes == 0)
        bytes = 1;
    convoy__hostslab_t *hs = hostslab_of(ops, ctx);
    if (hs != NULL) {
        pthread_mutex_lock(&hs->lock);
        int in_slab = convoy__arena_find(hs->arena, ptr, bytes) != NULL;
        pthread_mutex_unlock(&hs->lock);
        if (in_slab)
            return 1;
    }
    return ops->foreign_pinned(ptr, bytes);
}

/*
 * Pinned host memory for convoy_host_alloc, shared by the GPU components: large slabs
 * pinned by the vendor runtime (mapped, so that a copy kernel can reach them; portable,
 * so that every device can), cut by a first-fit allocator (arena.h) with 64-byte
 * alignment. Registration costs 0.3-4 ms per call (PHYSICS.md s2), so memory is pinned a
 * slab at a time, never per block.
 *
 * The state belongs to a context and a component and is shared by the component's
 * devices of that context: the first device opened creates it, the last one closed frees
 * every slab (a small registry keyed by the context and the ops, because host_mem ops
 * receive only the context). Every entry point may be called from any thread: the
 * program's threads allocate, free and ask is_pinned.
 *
 * Slabs are kept until the last device closes, even when empty: freeing pinned memory
 * (cudaFreeHost, hipHostFree) may wait for the device, which the progress thread must
 * never do in the middle of work.
 *
 * Plain C: the vendor calls come in through convoy__hostslab_ops_t (device/cuda/,
 * device/hip/). Internal to convoy.
 */
#ifndef CONVOY_HOSTSLAB_H
#define CONVOY_HOSTSLAB_H

#include <stddef.h>

#include "device/arena.h"
#include "device/device.h"

/* What a component gives the slabs: its names for messages and its runtime's calls. */
typedef struct convoy__hostslab_ops {
    const char *name;   /* the component, as messages start: "cuda" */
    const char *vendor; /* its devices in messages: "no CUDA device is open" */
    /* Pin a slab of bytes, mapped and portable: CONVOY_SUCCESS with *base_p and *dev_p
     * (the slab's device pointer, NULL where the component has no use for one), or an
     * error recorded in ctx with nothing left pinned. */
    convoy_status_t (*slab_alloc)(convoy_context_t *ctx, size_t bytes, void **base_p, void **dev_p);
    /* Unpin a slab; a failure is recorded without a context. */
    void (*slab_free)(void *base);
    /* Whether [p, p + bytes) (bytes > 0) outside the slabs is pinned memory (the
     * program's own); an error of the runtime means no, and is cleared. */
    int (*foreign_pinned)(const void *p, size_t bytes);
} convoy__hostslab_ops_t;

typedef struct convoy__hostslab convoy__hostslab_t;

/* The pinned-slab state of ctx for the component of ops, created by its first device and
 * shared by all of them (reference counted); slab_bytes is the slab size for a new state.
 * NULL on error (recorded). */
convoy__hostslab_t *convoy__hostslab_attach(const convoy__hostslab_ops_t *ops,
                                            convoy_context_t *ctx, size_t slab_bytes);
/* Drop a device's reference; the last one frees every slab, reporting blocks still
 * allocated at level info. Accepts NULL. */
void convoy__hostslab_detach(convoy__hostslab_t *hs);

/* For one submission: take the slab lock once (lock returns the slabs' arena, valid until
 * unlock), then map host ranges to the device pointers that kernels use. map_locked
 * returns 1 and sets *dev_p when [p, p + bytes) lies in one slab, else 0. last_p: NULL,
 * or the slab of the caller's previous hit, tried first and updated (a submission's host
 * sides mostly share a slab). Inline: a submission maps hundreds of ranges. */
const convoy__arena_t *convoy__hostslab_lock(convoy__hostslab_t *hs);
void convoy__hostslab_unlock(convoy__hostslab_t *hs);
static inline int convoy__hostslab_map_locked(const convoy__arena_t *slabs, const void *p,
                                              size_t bytes, void **dev_p,
                                              const convoy__arena_region_t **last_p)
{
    const convoy__arena_region_t *none = NULL;
    const convoy__arena_region_t *r =
        convoy__arena_find_hinted(slabs, p, bytes, last_p != NULL ? last_p : &none);
    if (r == NULL)
        return 0;
    *dev_p = (char *)r->tag + ((uintptr_t)p - (uintptr_t)r->base);
    return 1;
}

/* The host_mem ops (device.h) of the component of ops: each component's own are one-line
 * calls of these. alloc returns NULL with the error recorded; free ignores NULL and logs
 * a pointer it did not hand out; is_pinned also says yes for the program's pinned
 * memory (ops->foreign_pinned). */
void *convoy__hostslab_alloc(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx,
                             size_t bytes);
void convoy__hostslab_free(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx, void *ptr);
int convoy__hostslab_is_pinned(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx,
                               const void *ptr, size_t bytes);
/* The device_ptr op of a component whose slabs carry device pointers: the slab's device
 * pointer plus the offset; NULL outside the slabs. */
void *convoy__hostslab_device_ptr(const convoy__hostslab_ops_t *ops, convoy_context_t *ctx,
                                  const void *ptr, size_t bytes);

/* The slab-size parameter of a component (cuda_host_slab, hip_host_slab): NAME is its
 * name, the rest is the same for every component. */
#define CONVOY__HOSTSLAB_PARAM(NAME)                                                               \
    {                                                                                              \
        .name = (NAME), .type = CONVOY__PARAM_SIZE, .def = "64M", .min = 65536.0,                  \
        .max = 1099511627776.0,                                                                    \
        .doc = "convoy_host_alloc pins host memory a slab of this size at a time (PHYSICS.md s2: " \
               "registration costs 0.3-4 ms per call); larger blocks get their own slab"           \
    }

#endif /* CONVOY_HOSTSLAB_H */

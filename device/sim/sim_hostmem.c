/*
 * "Pinned" host memory for convoy_host_alloc on the sim device: the slabs of
 * device/hostslab.h, from plain aligned host memory. Nothing is page-locked, but the
 * runtime sees what it sees on a GPU: convoy_host_alloc memory reads as pinned, its
 * copies carry CONVOY__COPY_HOST_PINNED, and the cost model charges sim_pageable_us to
 * every other host copy (PHYSICS.md s2), so that the pageable paths can be tested.
 */
#include "config.h"

#include <stdlib.h>

#define CONVOY__SIM_INTERNAL 1
#include "device/sim/sim.h"
#include "src/util.h"

static convoy_status_t sim_slab_alloc(convoy_context_t *ctx, size_t bytes, void **base_p,
                                      void **dev_p)
{
    void *base = NULL;
    if (posix_memalign(&base, 64, bytes) != 0)
        return convoy__error(ctx, CONVOY_ERR_NOMEM,
                             "sim: out of host memory for a slab of %zu "
                             "bytes",
                             bytes);
    *base_p = base;
    *dev_p = NULL; /* no copy kernel reads it through a device address */
    return CONVOY_SUCCESS;
}

static void sim_slab_free(void *base)
{
    free(base);
}

/* The sim has no way to pin memory, so the program's own memory never reads as pinned. */
static int sim_foreign_pinned(const void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    return 0;
}

const convoy__hostslab_ops_t convoy__sim_hostslab_ops = {
    .name = "sim",
    .vendor = "sim",
    .slab_alloc = sim_slab_alloc,
    .slab_free = sim_slab_free,
    .foreign_pinned = sim_foreign_pinned,
};

static void *sim_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    return convoy__hostslab_alloc(&convoy__sim_hostslab_ops, ctx, bytes);
}

static void sim_host_free(convoy_context_t *ctx, void *ptr)
{
    convoy__hostslab_free(&convoy__sim_hostslab_ops, ctx, ptr);
}

static int sim_host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return convoy__hostslab_is_pinned(&convoy__sim_hostslab_ops, ctx, ptr, bytes);
}

/* Sim's chores run on the host: its slabs are read in place at their own addresses. */
static void *sim_host_device_ptr(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return sim_host_is_pinned(ctx, ptr, bytes) ? (void *)ptr : NULL;
}

const convoy__host_mem_ops_t convoy__sim_host_mem_ops = {
    .alloc = sim_host_alloc,
    .free = sim_host_free,
    .is_pinned = sim_host_is_pinned,
    .device_ptr = sim_host_device_ptr,
};

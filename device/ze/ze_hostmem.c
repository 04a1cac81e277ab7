/*
 * Pinned host memory for convoy_host_alloc on Level Zero: the slabs of
 * device/hostslab.h, from zeMemAllocHost in the shared context (ze_driver.c), as on CUDA
 * and HIP (hostslab.h says why: pinning costs milliseconds per call, PHYSICS.md s2).
 * Host allocations of a context are reachable from each of its devices, which is
 * hostslab's "mapped and portable". This file gives the slabs their Level Zero calls and
 * offers the component's host_mem ops.
 */
#include "config.h"

#include "device/ze/ze_dev.h"

static convoy_status_t ze_slab_alloc(convoy_context_t *ctx, size_t bytes, void **base_p,
                                     void **dev_p)
{
    ze_context_handle_t zctx = convoy__ze_context();
    if (zctx == NULL)
        return convoy__error(ctx, CONVOY_ERR_UNAVAILABLE,
                             "ze: pinned host memory needs an open Level Zero device");
    ze_host_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    void *base = NULL;
    convoy_status_t st = CONVOY_ZE_CALL(ctx, "ze", zeMemAllocHost(zctx, &desc, bytes, 64, &base));
    if (st != CONVOY_SUCCESS)
        return st;
    *base_p = base;
    *dev_p = NULL; /* no kernel of convoy's reads host memory on Level Zero */
    return CONVOY_SUCCESS;
}

/* The slabs are freed when the last device closes, before it releases the context. */
static void ze_slab_free(void *base)
{
    CONVOY_ZE_CALL(NULL, "ze", zeMemFree(convoy__ze_context(), base));
}

/* Outside the slabs: host allocations of the context at both ends. */
static int foreign_pinned_at(ze_context_handle_t zctx, const void *p)
{
    ze_memory_allocation_properties_t props = {.stype =
                                                   ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    return zeMemGetAllocProperties(zctx, p, &props, NULL) == ZE_RESULT_SUCCESS &&
           props.type == ZE_MEMORY_TYPE_HOST;
}

static int foreign_pinned(const void *p, size_t bytes)
{
    ze_context_handle_t zctx = convoy__ze_context();
    return zctx != NULL && foreign_pinned_at(zctx, p) &&
           foreign_pinned_at(zctx, (const char *)p + bytes - 1);
}

const convoy__hostslab_ops_t convoy__ze_hostslab_ops = {
    .name = "ze",
    .vendor = "Level Zero",
    .slab_alloc = ze_slab_alloc,
    .slab_free = ze_slab_free,
    .foreign_pinned = foreign_pinned,
};

/* ---- host_mem ops ------------------------------------------------------------------ */

static void *ze_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    return convoy__hostslab_alloc(&convoy__ze_hostslab_ops, ctx, bytes);
}

static void ze_host_free(convoy_context_t *ctx, void *ptr)
{
    convoy__hostslab_free(&convoy__ze_hostslab_ops, ctx, ptr);
}

static int ze_host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return convoy__hostslab_is_pinned(&convoy__ze_hostslab_ops, ctx, ptr, bytes);
}

const convoy__host_mem_ops_t convoy__ze_host_mem_ops = {
    .alloc = ze_host_alloc,
    .free = ze_host_free,
    .is_pinned = ze_host_is_pinned,
};

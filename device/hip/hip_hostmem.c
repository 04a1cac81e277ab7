/*
 * Pinned host memory for convoy_host_alloc on HIP: the slabs of device/hostslab.h, from
 * hipHostMalloc (mapped and portable), as on CUDA (hostslab.h says why: pinning costs
 * milliseconds per call, PHYSICS.md s2; hipHostFree synchronizes the device, so slabs are
 * freed only when the last device closes). This file gives the slabs their HIP calls and
 * offers the component's host_mem ops.
 */
#include "config.h"

#include "device/hip/hip_dev.h"

static convoy_status_t hip_slab_alloc(convoy_context_t *ctx, size_t bytes, void **base_p,
                                      void **dev_p)
{
    void *base = NULL;
    convoy_status_t st = CONVOY_HIP_CALL(
        ctx, "hip", hipHostMalloc(&base, bytes, hipHostMallocMapped | hipHostMallocPortable));
    if (st != CONVOY_SUCCESS)
        return st;
    *base_p = base;
    *dev_p = NULL; /* no kernel of convoy's reads host memory on HIP */
    return CONVOY_SUCCESS;
}

static void hip_slab_free(void *base)
{
    CONVOY_HIP_CALL(NULL, "hip", hipHostFree(base));
}

/* Outside the slabs, ask the runtime about both ends. Before ROCm 6 plain memory is an
 * error (hipErrorInvalidValue) and hipMemoryTypeHost is 0; ROCm 6 renamed the field
 * memoryType to type and answers hipMemoryTypeUnregistered instead. */
static int foreign_pinned_at(const void *p)
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

static int foreign_pinned(const void *p, size_t bytes)
{
    return foreign_pinned_at(p) && foreign_pinned_at((const char *)p + bytes - 1);
}

const convoy__hostslab_ops_t convoy__hip_hostslab_ops = {
    .name = "hip",
    .vendor = "HIP",
    .slab_alloc = hip_slab_alloc,
    .slab_free = hip_slab_free,
    .foreign_pinned = foreign_pinned,
};

/* ---- host_mem ops ------------------------------------------------------------------ */

static void *hip_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    return convoy__hostslab_alloc(&convoy__hip_hostslab_ops, ctx, bytes);
}

static void hip_host_free(convoy_context_t *ctx, void *ptr)
{
    convoy__hostslab_free(&convoy__hip_hostslab_ops, ctx, ptr);
}

static int hip_host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return convoy__hostslab_is_pinned(&convoy__hip_hostslab_ops, ctx, ptr, bytes);
}

const convoy__host_mem_ops_t convoy__hip_host_mem_ops = {
    .alloc = hip_host_alloc,
    .free = hip_host_free,
    .is_pinned = hip_host_is_pinned,
};

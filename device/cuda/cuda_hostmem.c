/*
 * Pinned host memory for convoy_host_alloc on CUDA: the slabs of device/hostslab.h, from
 * cudaHostAlloc (mapped, so that the SM copy kernel can reach them through the device
 * pointer each slab is tagged with; portable, so that every device can). This file gives
 * the slabs their CUDA calls and offers the component's host_mem ops.
 */
#include "config.h"

#include "device/cuda/cuda_dev.h"

static convoy_status_t cuda_slab_alloc(convoy_context_t *ctx, size_t bytes, void **base_p,
                                       void **dev_p)
{
    void *base = NULL, *dbase = NULL;
    convoy_status_t st = CONVOY_CUDA_CALL(
        ctx, "cuda", cudaHostAlloc(&base, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    if (st != CONVOY_SUCCESS)
        return st;
    st = CONVOY_CUDA_CALL(ctx, "cuda", cudaHostGetDevicePointer(&dbase, base, 0));
    if (st != CONVOY_SUCCESS) {
        CONVOY_CUDA_CALL(NULL, "cuda", cudaFreeHost(base));
        return st;
    }
    *base_p = base;
    *dev_p = dbase;
    return CONVOY_SUCCESS;
}

static void cuda_slab_free(void *base)
{
    CONVOY_CUDA_CALL(NULL, "cuda", cudaFreeHost(base));
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

const convoy__hostslab_ops_t convoy__cuda_hostslab_ops = {
    .name = "cuda",
    .vendor = "CUDA",
    .slab_alloc = cuda_slab_alloc,
    .slab_free = cuda_slab_free,
    .foreign_pinned = foreign_pinned,
};

/* ---- host_mem ops ------------------------------------------------------------------ */

static void *cuda_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    return convoy__hostslab_alloc(&convoy__cuda_hostslab_ops, ctx, bytes);
}

static void cuda_host_free(convoy_context_t *ctx, void *ptr)
{
    convoy__hostslab_free(&convoy__cuda_hostslab_ops, ctx, ptr);
}

static int cuda_host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return convoy__hostslab_is_pinned(&convoy__cuda_hostslab_ops, ctx, ptr, bytes);
}

static void *cuda_host_device_ptr(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return convoy__hostslab_device_ptr(&convoy__cuda_hostslab_ops, ctx, ptr, bytes);
}

const convoy__host_mem_ops_t convoy__cuda_host_mem_ops = {
    .alloc = cuda_host_alloc,
    .free = cuda_host_free,
    .is_pinned = cuda_host_is_pinned,
    .device_ptr = cuda_host_device_ptr,
};

/*
 * Device memory of a CUDA device: the pool of device/devpool.h over cudaMalloc chunks
 * (cuda_pool_chunk each) up to the device's capacity (cuda_memory); this file gives the
 * pool its CUDA calls. cudaFree synchronizes the device, which is why the pool keeps its
 * chunks (devpool.h says more).
 */
#include "config.h"

#include "device/cuda/cuda_dev.h"

static convoy_status_t cuda_pool_enter(convoy__device_t *d)
{
    return convoy__cuda_enter(convoy__cuda_dev(d));
}

static convoy_status_t cuda_chunk_alloc(convoy__device_t *d, size_t bytes, void **chunk_p)
{
    cudaError_t rc = cudaMalloc(chunk_p, bytes);
    if (rc == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return CONVOY_ERR_NOMEM;
    }
    return convoy__cuda_check(rc, "cudaMalloc", d->ctx, d->name);
}

static void cuda_chunk_free(convoy__device_t *d, void *chunk)
{
    CONVOY_CUDA_CALL(NULL, d->name, cudaFree(chunk));
}

const convoy__devpool_ops_t convoy__cuda_pool_ops = {
    .vendor = "CUDA",
    .malloc_name = "cudaMalloc",
    .enter = cuda_pool_enter,
    .chunk_alloc = cuda_chunk_alloc,
    .chunk_free = cuda_chunk_free,
};

/* See device.h: CONVOY_ERR_NOMEM (recorded, not logged) when full. */
convoy_status_t convoy__cuda_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    return convoy__devpool_alloc(&convoy__cuda_dev(d)->pool, bytes, ptr_p);
}

/* Accepts NULL; a pointer the pool did not hand out is logged and left alone. */
void convoy__cuda_mem_free(convoy__device_t *d, void *ptr)
{
    convoy__devpool_free(&convoy__cuda_dev(d)->pool, ptr);
}

/*
 * Device memory of a HIP device: the pool of device/devpool.h over hipMalloc chunks
 * (hip_pool_chunk each) up to the device's capacity (hip_memory); this file gives the
 * pool its HIP calls. hipFree synchronizes the device, which is why the pool keeps its
 * chunks.
 */
#include "config.h"

#include "device/hip/hip_dev.h"

static convoy_status_t hip_pool_enter(convoy__device_t *d)
{
    return convoy__hip_enter(convoy__hip_dev(d));
}

static convoy_status_t hip_chunk_alloc(convoy__device_t *d, size_t bytes, void **chunk_p)
{
    hipError_t rc = hipMalloc(chunk_p, bytes);
    if (rc == hipErrorOutOfMemory) {
        (void)hipGetLastError();
        return CONVOY_ERR_NOMEM;
    }
    return CONVOY_HIP_CALL(d->ctx, d->name, rc);
}

static void hip_chunk_free(convoy__device_t *d, void *chunk)
{
    CONVOY_HIP_CALL(NULL, d->name, hipFree(chunk));
}

const convoy__devpool_ops_t convoy__hip_pool_ops = {
    .vendor = "HIP",
    .malloc_name = "hipMalloc",
    .enter = hip_pool_enter,
    .chunk_alloc = hip_chunk_alloc,
    .chunk_free = hip_chunk_free,
};

convoy_status_t convoy__hip_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    return convoy__devpool_alloc(&convoy__hip_dev(d)->pool, bytes, ptr_p);
}

void convoy__hip_mem_free(convoy__device_t *d, void *ptr)
{
    convoy__devpool_free(&convoy__hip_dev(d)->pool, ptr);
}

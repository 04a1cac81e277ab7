/*
 * Device memory of a Level Zero device: the pool of device/devpool.h over
 * zeMemAllocDevice chunks (ze_pool_chunk each) up to the device's capacity (ze_memory);
 * this file gives the pool its Level Zero calls. zeMemFree may wait for the device to
 * stop using the memory, which is why the pool keeps its chunks.
 */
#include "config.h"

#include "device/ze/ze_dev.h"

/* Level Zero has no current device: every call names its device or context. */
static convoy_status_t ze_pool_enter(convoy__device_t *d)
{
    (void)d;
    return CONVOY_SUCCESS;
}

static convoy_status_t ze_chunk_alloc(convoy__device_t *d, size_t bytes, void **chunk_p)
{
    convoy__ze_dev_t *dev = convoy__ze_dev(d);
    ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ze_result_t rc = zeMemAllocDevice(dev->zctx, &desc, bytes, 256, dev->device, chunk_p);
    if (rc == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
        return CONVOY_ERR_NOMEM;
    return rc == ZE_RESULT_SUCCESS ? CONVOY_SUCCESS
                                   : convoy__ze_fail(rc, "zeMemAllocDevice", d->ctx, d->name);
}

static void ze_chunk_free(convoy__device_t *d, void *chunk)
{
    CONVOY_ZE_CALL(NULL, d->name, zeMemFree(convoy__ze_dev(d)->zctx, chunk));
}

const convoy__devpool_ops_t convoy__ze_pool_ops = {
    .vendor = "Level Zero",
    .malloc_name = "zeMemAllocDevice",
    .enter = ze_pool_enter,
    .chunk_alloc = ze_chunk_alloc,
    .chunk_free = ze_chunk_free,
};

convoy_status_t convoy__ze_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p)
{
    return convoy__devpool_alloc(&convoy__ze_dev(d)->pool, bytes, ptr_p);
}

void convoy__ze_mem_free(convoy__device_t *d, void *ptr)
{
    convoy__devpool_free(&convoy__ze_dev(d)->pool, ptr);
}

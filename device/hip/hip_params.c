/*
 * The HIP component's parameters: plain data without a HIP header, part of libconvoy
 * even when the component is a module (see device/cuda/cuda_params.c).
 */
#include "config.h"

#include "device/devpool.h"
#include "device/hip/hip_params.h"
#include "device/hostslab.h"

const char convoy__hip_doc[] = "AMD GPUs (HIP runtime, plain C): pooled device memory, "
                               "per-copy or batched copies, pinned host slabs";

const convoy__param_def_t convoy__hip_params[] = {
    CONVOY__DEVPOOL_MEMORY_PARAM(
        "hip_memory",
        "device memory convoy may use per HIP device; 0: 90% of what is free at start"),
    CONVOY__DEVPOOL_CHUNK_PARAM(
        "hip_pool_chunk",
        "device memory is taken from HIP in chunks of this size, kept until fini (hipFree "
        "synchronizes the device) unless a request needs an empty one's room; larger "
        "requests get their own chunk"),
    CONVOY__HOSTSLAB_PARAM("hip_host_slab"),
    {0},
};

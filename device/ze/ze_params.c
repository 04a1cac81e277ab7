/*
 * The Level Zero component's parameters: plain data without a Level Zero header, part
 * of libconvoy even when the component is a module (see device/cuda/cuda_params.c).
 */
#include "config.h"

#include "device/devpool.h"
#include "device/hostslab.h"
#include "device/ze/ze_params.h"

const char convoy__ze_doc[] = "Intel GPUs (Level Zero, plain C; never run on an Intel GPU): "
                              "an immediate command list per stream, batched copies";

const convoy__param_def_t convoy__ze_params[] = {
    CONVOY__DEVPOOL_MEMORY_PARAM("ze_memory", "device memory convoy may use per Level Zero "
                                              "device; 0: 90% of the device's memory"),
    CONVOY__DEVPOOL_CHUNK_PARAM(
        "ze_pool_chunk",
        "device memory is taken from Level Zero in chunks of this size (zeMemAllocDevice), "
        "kept until fini unless a request needs an empty one's room; larger requests get "
        "their own chunk"),
    CONVOY__HOSTSLAB_PARAM("ze_host_slab"),
    {0},
};

/*
 * The CUDA component's parameters. Plain data without a CUDA header: libconvoy holds
 * this table even when the component is a module that is not loaded (or cannot load),
 * so that the parameters are checked, listed by convoy-info and documented alike.
 */
#include "config.h"

#include "device/cuda/cuda_params.h"
#include "device/devpool.h"
#include "device/hostslab.h"

const char convoy__cuda_doc[] = "NVIDIA GPUs (CUDA runtime): pooled device memory, batched "
                                "copy engines, SM copy kernel, pinned host slabs";

const convoy__param_def_t convoy__cuda_params[] = {
    CONVOY__DEVPOOL_MEMORY_PARAM(
        "cuda_memory",
        "device memory convoy may use per CUDA device; 0: 90% of what is free at start"),
    CONVOY__DEVPOOL_CHUNK_PARAM(
        "cuda_pool_chunk",
        "device memory is taken from CUDA in chunks of this size, kept until fini (cudaFree "
        "stalls the device) unless a request needs an empty one's room; larger requests "
        "get their own chunk"),
    CONVOY__HOSTSLAB_PARAM("cuda_host_slab"),
    {.name = "cuda_sm_max_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "256K",
     .min = 0,
     .max = 1073741824.0,
     .doc = "auto copy method: the SM kernel when the mean copy is at most this (PHYSICS.md "
            "s1: 45-51 GB/s for 8-64 KiB chunks vs 8-13 for batched engines; engines as good "
            "from 1 MiB); 0: never"},
    {.name = "cuda_sm_min_copies",
     .type = CONVOY__PARAM_INT,
     .def = "2",
     .min = 1,
     .max = 1048576.0,
     .doc = "auto copy method: the SM kernel only for submissions of at least this many "
            "copies (a single copy goes alone)"},
    {.name = "cuda_sm_threads",
     .type = CONVOY__PARAM_INT,
     .def = "256",
     .min = 32,
     .max = 1024,
     .doc = "threads per block of the SM copy kernel (PHYSICS.md s1 measured 256, one block "
            "per chunk, 16-byte loads)"},
    {.name = "cuda_sm_block_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "64K",
     .min = 4096.0,
     .max = 1073741824.0,
     .doc = "the SM copy kernel gives a copy one more block (up to 64) per this many bytes of "
            "its submission's largest copy; one block per chunk up to 64 KiB as measured"},
    {.name = "cuda_desc_slots",
     .type = CONVOY__PARAM_INT,
     .def = "65536",
     .min = 256,
     .max = 16777216.0,
     .doc = "SM copy descriptors per CUDA device (32 bytes each, mapped pinned memory): "
            "copies in flight through the SM kernel before the oldest must complete"},
    {.name = "cuda_sm_desc",
     .type = CONVOY__PARAM_CHOICE,
     .def = "mapped",
     .choices = "mapped|device",
     .doc = "where the SM copy kernel reads its descriptors: mapped (the pinned ring, over "
            "the link: a round trip per block before its first load) or device (one "
            "cudaMemcpyAsync of the submission's slots ahead of the launch, same stream)"},
    {.name = "cuda_engine_max_copies",
     .type = CONVOY__PARAM_INT,
     .def = "512",
     .min = 1,
     .max = 4096,
     .doc = "the engine method makes one cudaMemcpyBatchAsync per this many copies of a "
            "submission; PHYSICS.md 1: no gain past ~512 entries, 2048-entry batches "
            "were slower (4.6 vs 13.7 GB/s for 8 KiB)"},
    {.name = "cuda_event_flags",
     .type = CONVOY__PARAM_BOOL,
     .def = "1",
     .doc = "events polled through a flag in pinned memory that the GPU writes behind each "
            "record (a load, where cudaEventQuery costs 1.4-1.7 us on the H200 host); 0: "
            "every poll asks CUDA"},
    {.name = "cuda_engine_overlap",
     .type = CONVOY__PARAM_BOOL,
     .def = "0",
     .doc = "set cudaMemcpyFlagPreferOverlapWithCompute on the engine method's batch "
            "calls (a hint the driver may ignore; not measured yet, see doc/cuda.md)"},
    {0},
};

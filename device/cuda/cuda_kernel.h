/*
 * The SM copy kernel's interface, shared by cuda_copy_kernel.cu (nvcc, C++) and the C
 * side of the CUDA component. Internal to convoy.
 */
#ifndef CONVOY_CUDA_KERNEL_H
#define CONVOY_CUDA_KERNEL_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One copy for the kernel: both pointers are valid on the device (device memory, or the
 * device pointer of mapped pinned host memory). 32 bytes, so that two threads fetch it
 * with two 16-byte loads. */
typedef struct convoy__cuda_desc {
    uint64_t src;   /* const void * */
    uint64_t dst;   /* void * */
    uint64_t bytes; /* > 0 */
    uint64_t pad;
} convoy__cuda_desc_t;

/* The most blocks one copy gets; see convoy__cuda_launch_copy_kernel. */
#define CONVOY__CUDA_MAX_BLOCKS_PER_COPY 64

/*
 * Enqueue one kernel on stream s that performs the n copies described at desc_dev (a
 * device pointer to n descriptors, normally mapped pinned host memory that must stay
 * unchanged until the kernel has completed). Each copy is carried by blocks_per_copy
 * blocks (1..CONVOY__CUDA_MAX_BLOCKS_PER_COPY) of threads threads (32..1024); the grid
 * is capped and the blocks loop over the copies. Returns the launch's status
 * (cudaGetLastError after the launch, so the last error is cleared).
 */
cudaError_t convoy__cuda_launch_copy_kernel(const void *desc_dev, int n, int threads,
                                            int blocks_per_copy, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* CONVOY_CUDA_KERNEL_H */

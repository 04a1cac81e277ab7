/*
 * The CUDA chores (rw_chores.h): one kernel for a ring, blockIdx.y picking the task, its
 * flow pointers passed in the parameter block (source and destination the same for a RW
 * flow).
 */
#include <cuda_runtime.h>

#include "bench/rw_chores.h"

#define RW_MAX_PTRS 1600 /* per launch: 20 bytes each, the parameter block stays under 32 KiB */
#define RW_THREADS 256

struct rw_params {
    int n; /* words per flow */
    unsigned add[RW_MAX_PTRS];
    const unsigned *src[RW_MAX_PTRS];
    unsigned *dst[RW_MAX_PTRS];
};

/* CUDA 12.1 and later on sm_70 and up take parameter blocks up to 32764 bytes. */
static_assert(sizeof(rw_params) <= 32764, "rw_params passes the kernel parameter limit");

__global__ void rw_kernel(const rw_params P)
{
    const unsigned *src = P.src[blockIdx.y];
    unsigned *dst = P.dst[blockIdx.y];
    unsigned add = P.add[blockIdx.y];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P.n; i += gridDim.x * blockDim.x)
        dst[i] = src[i] + add;
}

static int launch(const convoy_task_view_t *const *tasks, int n, cudaStream_t stream)
{
    static thread_local rw_params P; /* large: off the stack; one per progress thread */
    int words = (int)(tasks[0]->flow_bytes[0] / sizeof(unsigned));
    int bx = (words + RW_THREADS - 1) / RW_THREADS;
    if (bx > 64)
        bx = 64;
    for (int first = 0; first < n; first += RW_MAX_PTRS) {
        int k = n - first < RW_MAX_PTRS ? n - first : RW_MAX_PTRS;
        P.n = words;
        for (int t = 0; t < k; t++) {
            const convoy_task_view_t *v = tasks[first + t];
            P.src[t] = (const unsigned *)v->flows[0];
            P.dst[t] = (unsigned *)v->flows[v->nflows - 1];
            P.add[t] = *(const unsigned *)v->args;
        }
        rw_kernel<<<dim3(bx, k), RW_THREADS, 0, stream>>>(P);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int rw_cuda_chore(const convoy_task_view_t *task, void *stream)
{
    return launch(&task, 1, (cudaStream_t)stream);
}

extern "C" int rw_cuda_batch_chore(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    return launch(tasks, n, (cudaStream_t)stream);
}

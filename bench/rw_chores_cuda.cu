/*
 * The CUDA read-modify-write chores (rw_chores.h): one kernel for a ring, blockIdx.y
 * picking the task, its flow pointers passed in the parameter block.
 */
#include <cuda_runtime.h>

#include "bench/rw_chores.h"

#define RW_MAX_PTRS 2600 /* per launch: 12 bytes each, the parameter block stays under 32 KiB */
#define RW_THREADS 256

struct rw_params {
    int n; /* words per flow */
    unsigned add[RW_MAX_PTRS];
    unsigned *p[RW_MAX_PTRS];
};

__global__ void rw_kernel(const rw_params P)
{
    unsigned *w = P.p[blockIdx.y];
    unsigned add = P.add[blockIdx.y];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P.n; i += gridDim.x * blockDim.x)
        w[i] += add;
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
            P.p[t] = (unsigned *)tasks[first + t]->flows[0];
            P.add[t] = *(const unsigned *)tasks[first + t]->args;
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

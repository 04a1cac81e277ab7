/*
 * The CUDA chores (rw_chores.h): one kernel for a ring, blockIdx.y picking the task, its
 * flow pointers passed in the parameter block (source and destination the same for a RW
 * flow).
 */
#include <cuda_runtime.h>

#include "bench/rw_chores.h"

#define RW_MAX_PTRS 1600 /* per launch: 20 bytes each, the parameter block stays under 32 KiB */
#define RW_THREADS 256

/* A launch copies its whole parameter block, so the block is sized to the launch: the
 * smallest of three capacities that holds it (doc/guide.md, "batch chore"). */
template <int CAP> struct rw_params {
    int n; /* words per flow */
    unsigned add[CAP];
    const unsigned *src[CAP];
    unsigned *dst[CAP];
};

/* CUDA 12.1 and later on sm_70 and up take parameter blocks up to 32764 bytes. */
static_assert(sizeof(rw_params<RW_MAX_PTRS>) <= 32764, "rw_params passes the kernel parameter limit");

template <int CAP> __global__ void rw_kernel(const rw_params<CAP> P)
{
    const unsigned *src = P.src[blockIdx.y];
    unsigned *dst = P.dst[blockIdx.y];
    unsigned add = P.add[blockIdx.y];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P.n; i += gridDim.x * blockDim.x)
        dst[i] = src[i] + add;
}

template <int CAP>
static void launch_cap(const convoy_task_view_t *const *tasks, int k, int words, int bx,
                       cudaStream_t stream)
{
    static thread_local rw_params<CAP> P; /* large: off the stack; one per thread */
    P.n = words;
    for (int t = 0; t < k; t++) {
        const convoy_task_view_t *v = tasks[t];
        P.src[t] = (const unsigned *)v->flows[0];
        P.dst[t] = (unsigned *)v->flows[v->nflows - 1];
        P.add[t] = *(const unsigned *)v->args;
    }
    rw_kernel<CAP><<<dim3(bx, k), RW_THREADS, 0, stream>>>(P);
}

static int launch(const convoy_task_view_t *const *tasks, int n, cudaStream_t stream)
{
    int words = (int)(tasks[0]->flow_bytes[0] / sizeof(unsigned));
    int bx = (words + RW_THREADS - 1) / RW_THREADS;
    if (bx > 64)
        bx = 64;
    for (int first = 0; first < n; first += RW_MAX_PTRS) {
        int k = n - first < RW_MAX_PTRS ? n - first : RW_MAX_PTRS;
        if (k <= 64)
            launch_cap<64>(tasks + first, k, words, bx, stream);
        else if (k <= 512)
            launch_cap<512>(tasks + first, k, words, bx, stream);
        else
            launch_cap<RW_MAX_PTRS>(tasks + first, k, words, bx, stream);
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

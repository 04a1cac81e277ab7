/*
 * mixed_latency's chores on CUDA: out[i] = in[i] + 1 over the output's length.
 */
#include <cuda_runtime.h>

#include "convoy.h"

#define MIXED_MAX_TASKS 1024

/* A launch's tasks, passed by value. A launch copies its whole parameter block, so the
 * block is sized to the ring: the smallest of three capacities that holds it (a ring of
 * 32 tasks takes 0.6 KiB, not 20). */
template <int CAP> struct mixed_params {
    int n;
    const float *in[CAP];
    float *out[CAP];
    int len[CAP];
};

template <int CAP> __global__ void mixed_kernel(const mixed_params<CAP> P)
{
    int t = blockIdx.y;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P.len[t]; i += gridDim.x * blockDim.x)
        P.out[t][i] = P.in[t][i] + 1;
}

template <int CAP>
static void launch_cap(const convoy_task_view_t *const *ts, int k, cudaStream_t stream)
{
    static thread_local mixed_params<CAP> P; /* large: off the stack; one per thread */
    P.n = k;
    for (int i = 0; i < k; i++) {
        P.in[i] = (const float *)ts[i]->flows[0];
        P.out[i] = (float *)ts[i]->flows[1];
        P.len[i] = (int)(ts[i]->flow_bytes[1] / sizeof(float));
    }
    mixed_kernel<CAP><<<dim3(8, k), 256, 0, stream>>>(P);
}

extern "C" int mixed_cuda_work_batch(const convoy_task_view_t *const *ts, int n, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    for (int first = 0; first < n; first += MIXED_MAX_TASKS) {
        int k = n - first < MIXED_MAX_TASKS ? n - first : MIXED_MAX_TASKS;
        if (k <= 32)
            launch_cap<32>(ts + first, k, s);
        else if (k <= 256)
            launch_cap<256>(ts + first, k, s);
        else
            launch_cap<MIXED_MAX_TASKS>(ts + first, k, s);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int mixed_cuda_work(const convoy_task_view_t *t, void *stream)
{
    return mixed_cuda_work_batch(&t, 1, stream);
}

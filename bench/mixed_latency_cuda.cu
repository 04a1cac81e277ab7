/*
 * mixed_latency's chores on CUDA: out[i] = in[i] + 1 over the output's length.
 */
#include <cuda_runtime.h>

#include "convoy.h"

#define MIXED_MAX_TASKS 1024

struct mixed_params {
    int n;
    const float *in[MIXED_MAX_TASKS];
    float *out[MIXED_MAX_TASKS];
    int len[MIXED_MAX_TASKS];
};

__global__ void mixed_kernel(const mixed_params P)
{
    int t = blockIdx.y;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P.len[t]; i += gridDim.x * blockDim.x)
        P.out[t][i] = P.in[t][i] + 1;
}

extern "C" int mixed_cuda_work_batch(const convoy_task_view_t *const *ts, int n, void *stream)
{
    static thread_local mixed_params P;
    for (int first = 0; first < n; first += MIXED_MAX_TASKS) {
        int k = n - first < MIXED_MAX_TASKS ? n - first : MIXED_MAX_TASKS;
        P.n = k;
        for (int i = 0; i < k; i++) {
            P.in[i] = (const float *)ts[first + i]->flows[0];
            P.out[i] = (float *)ts[first + i]->flows[1];
            P.len[i] = (int)(ts[first + i]->flow_bytes[1] / sizeof(float));
        }
        mixed_kernel<<<dim3(8, k), 256, 0, (cudaStream_t)stream>>>(P);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int mixed_cuda_work(const convoy_task_view_t *t, void *stream)
{
    return mixed_cuda_work_batch(&t, 1, stream);
}

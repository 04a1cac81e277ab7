/*
 * bench/dist_tiny's chores on CUDA: the same values as its CPU chores (integer
 * arithmetic: equal on every path), one kernel per task or one per ring.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "convoy.h"

struct dist_tiny_args_dev {
    uint64_t round, index;
};

#define DT_MAX_TASKS 900 /* tasks per launch: the parameter block stays under 32 KiB */
#define DT_THREADS 256

__host__ __device__ static uint64_t dt_value(uint64_t round, uint64_t index)
{
    return (round + 1) * 1000003u + index * 7919u;
}

struct update_params {
    int ntasks;
    uint64_t words; /* per flow: every task's flow has the same size */
    uint64_t v[DT_MAX_TASKS];
    uint64_t *p[DT_MAX_TASKS];
};

struct sum_params {
    int ntasks;
    const uint64_t *in[DT_MAX_TASKS][3];
    uint64_t *out[DT_MAX_TASKS];
};

/* blockIdx.y: the task; x covers its words. */
__global__ void dt_update_kernel(const update_params P)
{
    uint64_t *p = P.p[blockIdx.y];
    uint64_t v = P.v[blockIdx.y];
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < P.words;
         i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

__global__ void dt_sum_kernel(const sum_params P)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < P.ntasks)
        *P.out[t] = *P.in[t][0] + *P.in[t][1] + *P.in[t][2];
}

static int launch_update(const convoy_task_view_t *const *tasks, int n, cudaStream_t s)
{
    static thread_local update_params P; /* large: off the stack; one per progress thread */
    P.words = tasks[0]->flow_bytes[0] / 8;
    int bx = (int)((P.words + DT_THREADS - 1) / DT_THREADS);
    if (bx > 64)
        bx = 64;
    if (bx < 1)
        bx = 1;
    for (int first = 0; first < n; first += DT_MAX_TASKS) {
        int k = n - first < DT_MAX_TASKS ? n - first : DT_MAX_TASKS;
        P.ntasks = k;
        for (int t = 0; t < k; t++) {
            const dist_tiny_args_dev *a = (const dist_tiny_args_dev *)tasks[first + t]->args;
            P.v[t] = dt_value(a->round, a->index);
            P.p[t] = (uint64_t *)tasks[first + t]->flows[0];
        }
        dt_update_kernel<<<dim3(bx, k), DT_THREADS, 0, s>>>(P);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

static int launch_sum(const convoy_task_view_t *const *tasks, int n, cudaStream_t s)
{
    static thread_local sum_params P;
    for (int first = 0; first < n; first += DT_MAX_TASKS) {
        int k = n - first < DT_MAX_TASKS ? n - first : DT_MAX_TASKS;
        P.ntasks = k;
        for (int t = 0; t < k; t++) {
            for (int f = 0; f < 3; f++)
                P.in[t][f] = (const uint64_t *)tasks[first + t]->flows[f];
            P.out[t] = (uint64_t *)tasks[first + t]->flows[3];
        }
        dt_sum_kernel<<<(k + DT_THREADS - 1) / DT_THREADS, DT_THREADS, 0, s>>>(P);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int dist_tiny_update_cuda(const convoy_task_view_t *t, void *stream)
{
    return launch_update(&t, 1, (cudaStream_t)stream);
}

extern "C" int dist_tiny_update_cuda_batch(const convoy_task_view_t *const *t, int n, void *stream)
{
    return launch_update(t, n, (cudaStream_t)stream);
}

extern "C" int dist_tiny_sum_cuda(const convoy_task_view_t *t, void *stream)
{
    return launch_sum(&t, 1, (cudaStream_t)stream);
}

extern "C" int dist_tiny_sum_cuda_batch(const convoy_task_view_t *const *t, int n, void *stream)
{
    return launch_sum(t, n, (cudaStream_t)stream);
}

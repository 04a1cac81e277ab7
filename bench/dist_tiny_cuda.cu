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

/* A launch's tasks, passed by value. A launch copies its whole parameter block (on the
 * H200 host a launch took 3.4-3.9 us with 16 bytes of parameters and 6.8-7.0 us with 31
 * KiB, doc/results.md, 2026-12-03 evening), so the block is sized to the ring: the
 * smallest of three capacities that holds it. */
template <int CAP> struct update_params {
    int ntasks;
    uint64_t words; /* per flow: every task's flow has the same size */
    uint64_t v[CAP];
    uint64_t *p[CAP];
};

template <int CAP> struct sum_params {
    int ntasks;
    const uint64_t *in[CAP][3];
    uint64_t *out[CAP];
};

/* blockIdx.y: the task; x covers its words. */
template <int CAP> __global__ void dt_update_kernel(const update_params<CAP> P)
{
    uint64_t *p = P.p[blockIdx.y];
    uint64_t v = P.v[blockIdx.y];
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < P.words;
         i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

template <int CAP> __global__ void dt_sum_kernel(const sum_params<CAP> P)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < P.ntasks)
        *P.out[t] = *P.in[t][0] + *P.in[t][1] + *P.in[t][2];
}

/* tasks[0..k), k <= CAP. */
template <int CAP>
static void update_cap(const convoy_task_view_t *const *tasks, int k, int bx, cudaStream_t s)
{
    static thread_local update_params<CAP> P; /* large: off the stack; one per thread */
    P.words = tasks[0]->flow_bytes[0] / 8;
    P.ntasks = k;
    for (int t = 0; t < k; t++) {
        const dist_tiny_args_dev *a = (const dist_tiny_args_dev *)tasks[t]->args;
        P.v[t] = dt_value(a->round, a->index);
        P.p[t] = (uint64_t *)tasks[t]->flows[0];
    }
    dt_update_kernel<CAP><<<dim3(bx, k), DT_THREADS, 0, s>>>(P);
}

template <int CAP>
static void sum_cap(const convoy_task_view_t *const *tasks, int k, cudaStream_t s)
{
    static thread_local sum_params<CAP> P;
    P.ntasks = k;
    for (int t = 0; t < k; t++) {
        for (int f = 0; f < 3; f++)
            P.in[t][f] = (const uint64_t *)tasks[t]->flows[f];
        P.out[t] = (uint64_t *)tasks[t]->flows[3];
    }
    dt_sum_kernel<CAP><<<(k + DT_THREADS - 1) / DT_THREADS, DT_THREADS, 0, s>>>(P);
}

static int launch_update(const convoy_task_view_t *const *tasks, int n, cudaStream_t s)
{
    uint64_t words = tasks[0]->flow_bytes[0] / 8;
    int bx = (int)((words + DT_THREADS - 1) / DT_THREADS);
    if (bx > 64)
        bx = 64;
    if (bx < 1)
        bx = 1;
    for (int first = 0; first < n; first += DT_MAX_TASKS) {
        int k = n - first < DT_MAX_TASKS ? n - first : DT_MAX_TASKS;
        if (k <= 32)
            update_cap<32>(tasks + first, k, bx, s);
        else if (k <= 256)
            update_cap<256>(tasks + first, k, bx, s);
        else
            update_cap<DT_MAX_TASKS>(tasks + first, k, bx, s);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

static int launch_sum(const convoy_task_view_t *const *tasks, int n, cudaStream_t s)
{
    for (int first = 0; first < n; first += DT_MAX_TASKS) {
        int k = n - first < DT_MAX_TASKS ? n - first : DT_MAX_TASKS;
        if (k <= 32)
            sum_cap<32>(tasks + first, k, s);
        else if (k <= 256)
            sum_cap<256>(tasks + first, k, s);
        else
            sum_cap<DT_MAX_TASKS>(tasks + first, k, s);
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

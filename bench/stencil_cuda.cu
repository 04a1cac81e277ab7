/*
 * bench/stencil's Jacobi step on CUDA. Each point takes the same double operations in the
 * same order as the CPU chore and the sequential run (((up + down) + left) + right, then
 * * 0.25: no multiply-add to contract), so the GPU's tiles equal theirs bit for bit.
 */
#include <cuda_runtime.h>

#include "convoy.h"

struct stencil_targs_dev {
    int ts;
};

enum { SN, SS, SW, SE };

struct step_params {
    int ts;
    double *a, *tmp;
    const double *nb[4];
    double *own[4];
};

__global__ void stencil_step_kernel(const step_params P)
{
    int ts = P.ts;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < ts * ts; i += gridDim.x * blockDim.x) {
        int y = i / ts, x = i % ts;
        const double *a = P.a;
        double up = y > 0 ? a[(y - 1) * ts + x] : P.nb[SN][x];
        double down = y < ts - 1 ? a[(y + 1) * ts + x] : P.nb[SS][x];
        double left = x > 0 ? a[y * ts + x - 1] : P.nb[SW][y];
        double right = x < ts - 1 ? a[y * ts + x + 1] : P.nb[SE][y];
        P.tmp[i] = 0.25 * (up + down + left + right);
    }
}

/* The new values back into the tile, and the tile's own edges from them. */
__global__ void stencil_store_kernel(const step_params P)
{
    int ts = P.ts;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < ts * ts; i += gridDim.x * blockDim.x) {
        P.a[i] = P.tmp[i];
        if (i < ts) {
            P.own[SN][i] = P.tmp[i];
            P.own[SS][i] = P.tmp[(ts - 1) * ts + i];
            P.own[SW][i] = P.tmp[i * ts];
            P.own[SE][i] = P.tmp[i * ts + ts - 1];
        }
    }
}

/* Flows as bench/stencil.c's step chore: tile (RW), neighbours' edges N S W E (READ), own
 * edges N S W E (WRITE). The scratch tile is stream-ordered: freed once the kernels ran. */
extern "C" int stencil_cuda_chore(const convoy_task_view_t *t, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    step_params P;
    P.ts = ((const stencil_targs_dev *)t->args)->ts;
    P.a = (double *)t->flows[0];
    for (int k = 0; k < 4; k++) {
        P.nb[k] = (const double *)t->flows[1 + k];
        P.own[k] = (double *)t->flows[5 + k];
    }
    size_t bytes = (size_t)P.ts * (size_t)P.ts * sizeof(double);
    if (cudaMallocAsync((void **)&P.tmp, bytes, s) != cudaSuccess)
        return -1;
    int threads = 256, blocks = (P.ts * P.ts + threads - 1) / threads;
    if (blocks > 1024)
        blocks = 1024;
    stencil_step_kernel<<<blocks, threads, 0, s>>>(P);
    stencil_store_kernel<<<blocks, threads, 0, s>>>(P);
    cudaError_t e = cudaGetLastError();
    cudaFreeAsync(P.tmp, s);
    return e == cudaSuccess ? 0 : -1;
}

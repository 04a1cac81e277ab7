/*
 * The SM copy method: one kernel carries every copy of a submission. Its threads read
 * and write mapped pinned host memory directly over the link, so a submission of many
 * small copies costs one launch instead of one copy-engine transfer per copy: PHYSICS.md
 * s1 measured 45-51 GB/s for 8-64 KiB chunks this way against 8-13 GB/s for the batched
 * copy engines.
 *
 * Layout of the work: copy c is carried by blocks_per_copy blocks (parts); the grid is
 * capped and blocks loop over (copy, part) items. Each block fetches its descriptor (two
 * 16-byte loads, by two threads) into shared memory, then copies with the widest vector
 * that the relative alignment of src and dst allows (16, 8, 4 or 1 bytes), a byte head
 * that brings both to that alignment and a byte tail. The body loop keeps up to four
 * loads in flight per thread before storing, because each load from host memory waits a
 * link round trip (about a microsecond).
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "device/cuda/cuda_kernel.h"

#define COPY_GRID_CAP 65535u /* blocks per launch; more (copy, part) items loop */

/* Copy n bytes from s to d with vectors of type V; s and d have the same address modulo
 * sizeof(V). The caller is thread tid of nthreads (>= 32) in block part of parts that
 * share the copy. Host-callable too, so that a host harness can run every thread of
 * every part in turn (the threads write disjoint bytes and never wait for each other). */
template <typename V>
__host__ __device__ __forceinline__ static void
copy_range(const unsigned char *s, unsigned char *d, uint64_t n, unsigned part, unsigned parts,
           unsigned tid, unsigned nthreads)
{
    const uint64_t w = sizeof(V);
    uint64_t head = (w - ((uintptr_t)s & (w - 1))) & (w - 1);
    if (head > n)
        head = n;
    const uint64_t nvec = (n - head) / w;
    const uint64_t tail = head + nvec * w;
    const V *sv = reinterpret_cast<const V *>(s + head);
    V *dv = reinterpret_cast<V *>(d + head);
    const uint64_t stride = (uint64_t)parts * nthreads;
    /* Up to four loads in flight before the first store, also for a thread's last
     * one to three vectors: an 8 KiB chunk at 256 threads x 16 bytes is two vectors per
     * thread, which a plain remainder loop would fetch one round trip after the other. */
    for (uint64_t i = (uint64_t)part * nthreads + tid; i < nvec; i += 4 * stride) {
        const uint64_t i1 = i + stride, i2 = i + 2 * stride, i3 = i + 3 * stride;
        V a = sv[i], b{}, c{}, e{};
        if (i1 < nvec)
            b = sv[i1];
        if (i2 < nvec)
            c = sv[i2];
        if (i3 < nvec)
            e = sv[i3];
        dv[i] = a;
        if (i1 < nvec)
            dv[i1] = b;
        if (i2 < nvec)
            dv[i2] = c;
        if (i3 < nvec)
            dv[i3] = e;
    }
    if (part == 0) {
        /* head < w <= 16 and n - tail < w: nthreads >= 32 threads cover both. */
        if (tid < head)
            d[tid] = s[tid];
        uint64_t t = tail + tid;
        if (t < n)
            d[t] = s[t];
    }
}

/* One thread's share of one copy: the widest vector the relative alignment allows. */
__host__ __device__ __forceinline__ static void copy_part(const unsigned char *s, unsigned char *d,
                                                          uint64_t n, unsigned part, unsigned parts,
                                                          unsigned tid, unsigned nthreads)
{
    const uintptr_t rel = (uintptr_t)s ^ (uintptr_t)d;
    if ((rel & 15) == 0)
        copy_range<uint4>(s, d, n, part, parts, tid, nthreads);
    else if ((rel & 7) == 0)
        copy_range<uint2>(s, d, n, part, parts, tid, nthreads);
    else if ((rel & 3) == 0)
        copy_range<unsigned>(s, d, n, part, parts, tid, nthreads);
    else
        copy_range<unsigned char>(s, d, n, part, parts, tid, nthreads);
}

__global__ void __launch_bounds__(1024)
    convoy_cuda_copy_kernel(const convoy__cuda_desc_t *desc, unsigned n, unsigned parts)
{
    __shared__ __align__(16) convoy__cuda_desc_t cur;
    const uint64_t items = (uint64_t)n * parts;
    for (uint64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const unsigned c = (unsigned)(item / parts);
        const unsigned part = (unsigned)(item % parts);
        if (threadIdx.x < 2)
            reinterpret_cast<uint4 *>(&cur)[threadIdx.x] =
                reinterpret_cast<const uint4 *>(desc + c)[threadIdx.x];
        __syncthreads();
        copy_part(reinterpret_cast<const unsigned char *>(cur.src),
                  reinterpret_cast<unsigned char *>(cur.dst), cur.bytes, part, parts, threadIdx.x,
                  blockDim.x);
        __syncthreads(); /* everyone is done with cur before the next item replaces it */
    }
}

extern "C" cudaError_t convoy__cuda_launch_copy_kernel(const void *desc_dev, int n, int threads,
                                                       int blocks_per_copy, cudaStream_t s)
{
    if (desc_dev == NULL || n <= 0 || threads < 32 || threads > 1024 || blocks_per_copy < 1 ||
        blocks_per_copy > CONVOY__CUDA_MAX_BLOCKS_PER_COPY)
        return cudaErrorInvalidValue;
    const unsigned long long items = (unsigned long long)n * (unsigned)blocks_per_copy;
    const unsigned grid = items < COPY_GRID_CAP ? (unsigned)items : COPY_GRID_CAP;
    convoy_cuda_copy_kernel<<<grid, (unsigned)threads, 0, s>>>(
        static_cast<const convoy__cuda_desc_t *>(desc_dev), (unsigned)n, (unsigned)blocks_per_copy);
    return cudaGetLastError();
}

/*
 * tiny_tasks on CUDA: the chores (one kernel per task, or one per ring) and the raw-CUDA
 * baselines measured in the same binary (PHYSICS.md section 4's arrangements).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/tiny_tasks.h"

struct tiny_args_dev {
    int inputs, outputs;
};

#define TINY_MAX_PTRS 3900 /* pointers per launch: the parameter block stays under 32 KiB */
#define TINY_THREADS 256

/* A launch's flows, passed by value. A launch copies its whole parameter block, so the
 * block is sized to the launch: the smallest of three capacities that holds its
 * pointers (a ring of 256 tasks of 4 flows takes 8 KiB, not 31). */
template <int CAP> struct ring_params {
    int ntasks, inputs, outputs, n; /* n: floats per flow */
    float *p[CAP];                  /* task t's flow f at p[t * (inputs + outputs) + f] */
};

__device__ static float tiny_value(float *const *f, int inputs, int i)
{
    if (inputs == 3)
        return f[0][i] + f[1][i] * f[2][i];
    float v = 0;
    for (int k = 0; k < inputs; k++)
        v += f[k][i];
    return v;
}

/* blockIdx.y: the task; x covers its elements. */
template <int CAP> __global__ void tiny_ring_kernel(const ring_params<CAP> P)
{
    int nf = P.inputs + P.outputs;
    float *const *f = P.p + (size_t)blockIdx.y * nf;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P.n; i += gridDim.x * blockDim.x) {
        float v = tiny_value(f, P.inputs, i);
        for (int o = 0; o < P.outputs; o++)
            f[P.inputs + o][i] = v;
    }
}

/* Task t's flow f is flow(t, f): written straight into the block of the launch's size. */
template <int CAP, class Flow>
static void launch_cap(int k, int inputs, int outputs, int elems, int bx, cudaStream_t stream,
                       Flow flow)
{
    static thread_local ring_params<CAP> P; /* large: off the stack; one per thread */
    int nf = inputs + outputs;
    P.ntasks = k;
    P.inputs = inputs;
    P.outputs = outputs;
    P.n = elems;
    for (int t = 0; t < k; t++)
        for (int f = 0; f < nf; f++)
            P.p[t * nf + f] = flow(t, f);
    tiny_ring_kernel<CAP><<<dim3(bx, k), TINY_THREADS, 0, stream>>>(P);
}

/* One kernel for k tasks (k * (inputs + outputs) <= TINY_MAX_PTRS). */
template <class Flow>
static void launch_tasks(int k, int inputs, int outputs, int elems, cudaStream_t stream,
                         Flow flow)
{
    int bx = (elems + TINY_THREADS - 1) / TINY_THREADS;
    if (bx > 64)
        bx = 64;
    int need = k * (inputs + outputs);
    if (need <= 128)
        launch_cap<128>(k, inputs, outputs, elems, bx, stream, flow);
    else if (need <= 1024)
        launch_cap<1024>(k, inputs, outputs, elems, bx, stream, flow);
    else
        launch_cap<TINY_MAX_PTRS>(k, inputs, outputs, elems, bx, stream, flow);
}

static int launch_ring(const convoy_task_view_t *const *tasks, int n, cudaStream_t stream)
{
    const tiny_args_dev *a = (const tiny_args_dev *)tasks[0]->args;
    int per_launch = TINY_MAX_PTRS / (a->inputs + a->outputs);
    int elems = (int)(tasks[0]->flow_bytes[0] / sizeof(float));
    for (int first = 0; first < n; first += per_launch) {
        int k = n - first < per_launch ? n - first : per_launch;
        launch_tasks(k, a->inputs, a->outputs, elems, stream,
                     [&](int t, int f) { return (float *)tasks[first + t]->flows[f]; });
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int tiny_cuda_chore(const convoy_task_view_t *task, void *stream)
{
    return launch_ring(&task, 1, (cudaStream_t)stream);
}

extern "C" int tiny_cuda_batch_chore(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    return launch_ring(tasks, n, (cudaStream_t)stream);
}

/* ---- raw-CUDA baselines -------------------------------------------------------------- */

static float input_value(int t, int k, size_t i)
{
    return (float)((t + 3 * k + (int)(i % 13)) % 17);
}

struct raw_world {
    int tasks, nf, inputs, outputs;
    size_t bytes;
    float *host, *dev; /* flow j of task t at (t * nf + j) * bytes */
    cudaStream_t s;
};

#define RAW_CHECK(x)                                                                               \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "raw baseline: %s failed: %s\n", #x, cudaGetErrorName(e_));            \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static float *flow_ptr(float *base, const raw_world *w, int t, int f)
{
    return (float *)((char *)base + ((size_t)t * w->nf + f) * w->bytes);
}

static int raw_setup(raw_world *w, int tasks, int inputs, int outputs, size_t bytes)
{
    w->tasks = tasks;
    w->inputs = inputs;
    w->outputs = outputs;
    w->nf = inputs + outputs;
    w->bytes = bytes;
    size_t total = (size_t)tasks * w->nf * bytes;
    RAW_CHECK(cudaMallocHost((void **)&w->host, total));
    RAW_CHECK(cudaMalloc((void **)&w->dev, total));
    RAW_CHECK(cudaStreamCreateWithFlags(&w->s, cudaStreamNonBlocking));
    size_t n = bytes / sizeof(float);
    for (int t = 0; t < tasks; t++)
        for (int f = 0; f < w->nf; f++)
            for (size_t i = 0; i < n; i++)
                flow_ptr(w->host, w, t, f)[i] = f < inputs ? input_value(t, f, i) : -1.0f;
    return 0;
}

static int raw_verify_free(raw_world *w)
{
    size_t n = w->bytes / sizeof(float);
    int ok = 1;
    for (int t = 0; t < w->tasks && ok; t++)
        for (int o = 0; o < w->outputs && ok; o++)
            for (size_t i = 0; i < n; i++) {
                float v = 0;
                if (w->inputs == 3)
                    v = input_value(t, 0, i) + input_value(t, 1, i) * input_value(t, 2, i);
                else
                    for (int k = 0; k < w->inputs; k++)
                        v += input_value(t, k, i);
                if (flow_ptr(w->host, w, t, w->inputs + o)[i] != v) {
                    ok = 0;
                    break;
                }
            }
    cudaFreeHost(w->host);
    cudaFree(w->dev);
    cudaStreamDestroy(w->s);
    return ok;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* One cudaMemcpyAsync per flow and one kernel per task: what task runtimes do today. */
extern "C" double tiny_raw_per_copy(int tasks, int inputs, int outputs, size_t bytes)
{
    raw_world w;
    if (raw_setup(&w, tasks, inputs, outputs, bytes) != 0)
        return -1;
    int elems = (int)(bytes / sizeof(float));
    double t0 = now_s();
    for (int t = 0; t < tasks; t++) {
        for (int f = 0; f < inputs; f++)
            RAW_CHECK(cudaMemcpyAsync(flow_ptr(w.dev, &w, t, f), flow_ptr(w.host, &w, t, f), bytes,
                                      cudaMemcpyHostToDevice, w.s));
        launch_tasks(1, inputs, outputs, elems, w.s,
                     [&](int, int f) { return flow_ptr(w.dev, &w, t, f); });
        for (int o = 0; o < outputs; o++)
            RAW_CHECK(cudaMemcpyAsync(flow_ptr(w.host, &w, t, inputs + o),
                                      flow_ptr(w.dev, &w, t, inputs + o), bytes,
                                      cudaMemcpyDeviceToHost, w.s));
    }
    RAW_CHECK(cudaStreamSynchronize(w.s));
    double secs = now_s() - t0;
    return raw_verify_free(&w) ? secs : -1;
}

static int raw_batch(void **dst, void **src, size_t *sizes, size_t n, cudaStream_t s)
{
#if CUDART_VERSION >= 12080
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0;
#if CUDART_VERSION >= 13000
    RAW_CHECK(cudaMemcpyBatchAsync(dst, src, sizes, n, &attr, &idx, 1, s));
#else
    size_t fail = 0;
    RAW_CHECK(cudaMemcpyBatchAsync(dst, src, sizes, n, &attr, &idx, 1, &fail, s));
#endif
#else
    for (size_t i = 0; i < n; i++)
        RAW_CHECK(cudaMemcpyAsync(dst[i], src[i], sizes[i], cudaMemcpyDefault, s));
#endif
    return 0;
}

/* Rings of `ring` tasks: one batched H2D, ONE kernel for the ring, one batched D2H. */
extern "C" double tiny_raw_ring(int tasks, int inputs, int outputs, size_t bytes, int ring)
{
    raw_world w;
    if (raw_setup(&w, tasks, inputs, outputs, bytes) != 0)
        return -1;
    int nf = inputs + outputs;
    size_t cap = (size_t)ring * nf;
    void **dst = (void **)malloc(cap * sizeof(void *)),
         **src = (void **)malloc(cap * sizeof(void *));
    size_t *sizes = (size_t *)malloc(cap * sizeof(size_t));
    int elems = (int)(bytes / sizeof(float));
    int per_launch = TINY_MAX_PTRS / nf;
    double t0 = now_s();
    for (int first = 0; first < tasks; first += ring) {
        int k = tasks - first < ring ? tasks - first : ring;
        size_t n = 0;
        for (int t = first; t < first + k; t++)
            for (int f = 0; f < inputs; f++, n++) {
                dst[n] = flow_ptr(w.dev, &w, t, f);
                src[n] = flow_ptr(w.host, &w, t, f);
                sizes[n] = bytes;
            }
        if (raw_batch(dst, src, sizes, n, w.s) != 0)
            return -1;
        for (int l = 0; l < k; l += per_launch) {
            int kk = k - l < per_launch ? k - l : per_launch;
            launch_tasks(kk, inputs, outputs, elems, w.s, [&](int t, int f) {
                return flow_ptr(w.dev, &w, first + l + t, f);
            });
        }
        n = 0;
        for (int t = first; t < first + k; t++)
            for (int o = 0; o < outputs; o++, n++) {
                dst[n] = flow_ptr(w.host, &w, t, inputs + o);
                src[n] = flow_ptr(w.dev, &w, t, inputs + o);
                sizes[n] = bytes;
            }
        if (raw_batch(dst, src, sizes, n, w.s) != 0)
            return -1;
    }
    RAW_CHECK(cudaStreamSynchronize(w.s));
    double secs = now_s() - t0;
    free(dst);
    free(src);
    free(sizes);
    return raw_verify_free(&w) ? secs : -1;
}

/*
 * copy_paths: the bandwidth of each copy method of the CUDA device, against raw CUDA in
 * the same binary (PHYSICS.md s1 and s2 are the reference figures).
 *
 * For each direction (H2D, D2H), chunk size (256 B .. 8 MiB) and count (9 .. 2048), with
 * pinned host memory from convoy_host_alloc (and, for 8 KiB x 512, pageable memory too),
 * it times one memcpy_multi submission per repetition for every method the device offers
 * (engine, sm, loop) and auto, straight through the device's ops (convoy__ctx_accel):
 * the median of --reps timed repetitions after 3 warm-ups, timed with CUDA events
 * recorded around the submission on the same stream, so that the host's submission time
 * counts as on an idle GPU. The raw baselines are one cudaMemcpyAsync per chunk and one
 * cudaMemcpyBatchAsync. Chunks sit 256 bytes apart; after each method's timing a fresh
 * submission copies fresh random bytes over a poisoned destination and the whole range,
 * gaps included, is checked.
 *
 * One line per configuration:
 *   copy_paths dir=H2D chunk=8192 count=512 mem=pinned method=sm used=sm gbs=44.1
 *              raw_loop_gbs=3.0 raw_batch_gbs=10.2 verified=yes
 * and a last line "copy_paths configs=N verified=yes|no". Exit status: 0, 1 when any
 * submission failed or any data was wrong, 77 without a CUDA device, 2 on bad options.
 *
 * Options: --quick (fewer sizes, 10 repetitions), --reps N; --convoy-* options go to
 * convoy (e.g. --convoy-cuda_sm_threads=512).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convoy.h"
extern "C" {
#include "device/device.h"
#include "src/context.h"
}

#define GAP 256                /* bytes between chunks: overruns land in poison */
#define MAX_TOTAL (1ull << 30) /* configurations moving more are skipped */
#define WARMUPS 3
#define POISON 0xA5

static const size_t chunks_full[] = {256, 1024, 8192, 65536, 1u << 20, 8u << 20};
static const int counts_full[] = {9, 128, 512, 2048};
static const size_t chunks_quick[] = {1024, 8192, 65536, 1u << 20};
static const int counts_quick[] = {9, 512};

struct bench {
    convoy__device_t *dev;
    convoy__stream_t *stream;
    cudaStream_t s;
    cudaEvent_t t0, t1;
    int reps;
    unsigned char *pinned;   /* host side, convoy_host_alloc */
    unsigned char *pageable; /* host side for the pageable configurations */
    unsigned char *dbuf;     /* device side, from the device's pool */
    unsigned char *ref;      /* the expected bytes (pageable) */
    unsigned char *check;    /* device memory read back (pageable) */
    convoy__copy_t *copies;
    void **dsts;
    const void **srcs;
    size_t *sizes;
    uint64_t rng;
    int configs, bad;
};

static void die(const char *what, cudaError_t rc)
{
    fprintf(stderr, "copy_paths: %s: %s (%s)\n", what, cudaGetErrorName(rc),
            cudaGetErrorString(rc));
    exit(1);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess)                                                                    \
            die(#call, rc_);                                                                       \
    } while (0)

static void fill_random(struct bench *b, unsigned char *p, size_t n)
{
    uint64_t x = b->rng;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
    b->rng = x;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* One timed submission: what = 0 memcpy_multi(method), 1 raw loop, 2 raw batch. Returns
 * the milliseconds between the events, or a negative value when the submission failed. */
static float run_once(struct bench *b, int what, int method, int count, int *used_p)
{
    CK(cudaEventRecord(b->t0, b->s));
    if (what == 0) {
        int submitted = 0, used = -1;
        convoy_status_t st = b->dev->ops->memcpy_multi(b->dev, b->stream, b->copies, count, method,
                                                       &submitted, &used);
        if (st != CONVOY_SUCCESS) {
            fprintf(stderr, "copy_paths: memcpy_multi(%s) failed after %d of %d copies: %s\n",
                    convoy__copy_method_name(method), submitted, count, convoy_last_error(NULL));
            CK(cudaStreamSynchronize(b->s));
            return -1;
        }
        if (used_p != NULL)
            *used_p = used;
    } else if (what == 1) {
        for (int i = 0; i < count; i++) {
            const convoy__copy_t *c = &b->copies[i];
            CK(cudaMemcpyAsync(
                c->dst, c->src, c->bytes,
                c->dir == CONVOY__H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, b->s));
        }
    } else {
#if CUDART_VERSION >= 12080
        for (int i = 0; i < count; i++) {
            b->dsts[i] = b->copies[i].dst;
            b->srcs[i] = b->copies[i].src;
            b->sizes[i] = b->copies[i].bytes;
        }
        cudaMemcpyAttributes attr;
        memset(&attr, 0, sizeof(attr));
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        size_t idx = 0;
#if CUDART_VERSION >= 13000
        CK(cudaMemcpyBatchAsync(b->dsts, b->srcs, b->sizes, (size_t)count, &attr, &idx, 1, b->s));
#else
        size_t fail = 0;
        CK(cudaMemcpyBatchAsync((void **)b->dsts, (void **)b->srcs, b->sizes, (size_t)count, &attr,
                                &idx, 1, &fail, b->s));
#endif
#endif
    }
    CK(cudaEventRecord(b->t1, b->s));
    CK(cudaEventSynchronize(b->t1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, b->t0, b->t1));
    return ms;
}

/* GB/s from the median of reps timed runs after the warm-ups; 0 on failure. */
static double measure(struct bench *b, int what, int method, int count, size_t total, int *used_p)
{
    float *ms = (float *)malloc((size_t)b->reps * sizeof(float));
    if (ms == NULL) {
        fprintf(stderr, "copy_paths: out of memory\n");
        exit(1);
    }
    for (int r = 0; r < WARMUPS + b->reps; r++) {
        float t = run_once(b, what, method, count, used_p);
        if (t < 0) {
            free(ms);
            return 0;
        }
        if (r >= WARMUPS)
            ms[r - WARMUPS] = t;
    }
    qsort(ms, (size_t)b->reps, sizeof(float), cmp_float);
    double med = b->reps % 2 ? ms[b->reps / 2] : 0.5 * (ms[b->reps / 2 - 1] + ms[b->reps / 2]);
    free(ms);
    return med > 0 ? (double)total / (med * 1e-3) / 1e9 : 0;
}

/* One fresh submission over poisoned destinations, then every byte of the span checked:
 * chunks hold the source, gaps still hold poison. */
static int verify(struct bench *b, int method, int count, size_t chunk, int h2d,
                  unsigned char *host)
{
    size_t stride = chunk + GAP, span = (size_t)count * stride;
    const unsigned char *expect;
    const unsigned char *got;
    if (h2d) {
        fill_random(b, host, span);
        CK(cudaMemsetAsync(b->dbuf, POISON, span, b->s));
        expect = host;
    } else {
        fill_random(b, b->ref, span);
        CK(cudaMemcpyAsync(b->dbuf, b->ref, span, cudaMemcpyHostToDevice, b->s));
        CK(cudaStreamSynchronize(b->s));
        memset(host, POISON, span);
        expect = b->ref;
    }
    int submitted = 0;
    convoy_status_t st =
        b->dev->ops->memcpy_multi(b->dev, b->stream, b->copies, count, method, &submitted, NULL);
    if (st != CONVOY_SUCCESS) {
        fprintf(stderr, "copy_paths: verification submission failed: %s\n",
                convoy_last_error(NULL));
        CK(cudaStreamSynchronize(b->s));
        return 0;
    }
    if (h2d) {
        CK(cudaMemcpyAsync(b->check, b->dbuf, span, cudaMemcpyDeviceToHost, b->s));
        got = b->check;
    } else {
        got = host;
    }
    CK(cudaStreamSynchronize(b->s));
    for (int i = 0; i < count; i++) {
        const unsigned char *g = got + (size_t)i * stride, *e = expect + (size_t)i * stride;
        if (memcmp(g, e, chunk) != 0) {
            size_t k = 0;
            while (g[k] == e[k])
                k++;
            fprintf(stderr, "copy_paths: chunk %d differs at byte %zu (got %02x, want %02x)\n", i,
                    k, g[k], e[k]);
            return 0;
        }
        for (size_t k = chunk; k < stride; k++) {
            if (g[k] != POISON) {
                fprintf(stderr, "copy_paths: the gap after chunk %d was written at byte %zu\n", i,
                        k - chunk);
                return 0;
            }
        }
    }
    return 1;
}

static void run_config(struct bench *b, int h2d, size_t chunk, int count, int pinned)
{
    size_t stride = chunk + GAP, total = chunk * (size_t)count;
    unsigned char *host = pinned ? b->pinned : b->pageable;
    for (int i = 0; i < count; i++) {
        convoy__copy_t *c = &b->copies[i];
        unsigned char *hp = host + (size_t)i * stride, *dp = b->dbuf + (size_t)i * stride;
        c->dst = h2d ? (void *)dp : (void *)hp;
        c->src = h2d ? (const void *)hp : (const void *)dp;
        c->bytes = chunk;
        c->dir = h2d ? CONVOY__H2D : CONVOY__D2H;
        c->flags = pinned ? CONVOY__COPY_HOST_PINNED : 0;
        c->tag = i;
    }
    double raw_loop = measure(b, 1, -1, count, total, NULL);
    double raw_batch = 0;
#if CUDART_VERSION >= 12080
    raw_batch = measure(b, 2, -1, count, total, NULL);
#endif
    char raw_batch_text[32];
    if (CUDART_VERSION >= 12080)
        snprintf(raw_batch_text, sizeof(raw_batch_text), "%.2f", raw_batch);
    else
        snprintf(raw_batch_text, sizeof(raw_batch_text), "na");

    static const int methods[] = {CONVOY__METHOD_ENGINE, CONVOY__METHOD_SM, CONVOY__METHOD_LOOP,
                                  -1};
    for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
        int method = methods[m];
        if (method >= 0 && !((b->dev->methods >> method) & 1u))
            continue;
        if (method == CONVOY__METHOD_SM && !pinned)
            continue; /* the kernel cannot reach pageable memory */
        int used = -1;
        double gbs = measure(b, 0, method, count, total, &used);
        int ok = gbs > 0 && verify(b, method, count, chunk, h2d, host);
        b->configs++;
        b->bad += !ok;
        printf("copy_paths dir=%s chunk=%zu count=%d mem=%s method=%s used=%s gbs=%.2f "
               "raw_loop_gbs=%.2f raw_batch_gbs=%s verified=%s\n",
               h2d ? "H2D" : "D2H", chunk, count, pinned ? "pinned" : "pageable",
               convoy__copy_method_name(method), convoy__copy_method_name(used), gbs, raw_loop,
               raw_batch_text, ok ? "yes" : "no");
        fflush(stdout);
    }
}

static int parse_int(const char *opt, const char *v, int min, int max)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (v == NULL || end == v || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "copy_paths: %s needs an integer in [%d, %d]\n", opt, min, max);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n < 1) {
        printf("copy_paths: no CUDA device (%s); skipped\n",
               rc != cudaSuccess ? cudaGetErrorName(rc) : "count 0");
        return 77;
    }
    convoy_param_preset("devices", "cuda");
    convoy_context_t *ctx;
    if (convoy_init(&argc, &argv, &ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "copy_paths: convoy_init: %s\n", convoy_last_error(NULL));
        return 1;
    }
    struct bench b;
    memset(&b, 0, sizeof(b));
    int quick = 0, reps = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--reps") == 0)
            reps = parse_int("--reps", i + 1 < argc ? argv[++i] : NULL, 1, 100000);
        else if (strncmp(argv[i], "--reps=", 7) == 0)
            reps = parse_int("--reps", argv[i] + 7, 1, 100000);
        else {
            fprintf(stderr, "usage: copy_paths [--quick] [--reps N] [--convoy-NAME=VALUE...]\n");
            convoy_fini(ctx);
            return 2;
        }
    }
    b.reps = reps > 0 ? reps : quick ? 10 : 20;
    b.rng = 0x9e3779b97f4a7c15ull;
    b.dev = convoy__ctx_accel(ctx, 0);
    if (b.dev == NULL || b.dev->kind != CONVOY_DEVICE_CUDA) {
        fprintf(stderr, "copy_paths: accelerator 0 is not a CUDA device\n");
        convoy_fini(ctx);
        return 1;
    }
    const size_t *chunks = quick ? chunks_quick : chunks_full;
    const int *counts = quick ? counts_quick : counts_full;
    int nchunks = quick ? 4 : 6, ncounts = quick ? 2 : 4;
    size_t span_max = 0;
    int count_max = 0;
    for (int c = 0; c < nchunks; c++)
        for (int k = 0; k < ncounts; k++)
            if (chunks[c] * (size_t)counts[k] <= MAX_TOTAL) {
                size_t span = (chunks[c] + GAP) * (size_t)counts[k];
                span_max = span > span_max ? span : span_max;
                count_max = counts[k] > count_max ? counts[k] : count_max;
            }
    size_t pageable_span = 512 * (size_t)(8192 + GAP);

    CK(cudaSetDevice(0)); /* cuda0: convoy's first CUDA device is ordinal 0 */
    if (b.dev->ops->stream_create(b.dev, &b.stream) != CONVOY_SUCCESS ||
        b.dev->ops->mem_alloc(b.dev, span_max, (void **)&b.dbuf) != CONVOY_SUCCESS) {
        fprintf(stderr, "copy_paths: %s\n", convoy_last_error(NULL));
        convoy_fini(ctx);
        return 1;
    }
    b.s = (cudaStream_t)b.dev->ops->stream_native(b.dev, b.stream);
    b.pinned = (unsigned char *)convoy_host_alloc(ctx, span_max);
    b.pageable = (unsigned char *)malloc(pageable_span);
    b.ref = (unsigned char *)malloc(span_max);
    b.check = (unsigned char *)malloc(span_max);
    b.copies = (convoy__copy_t *)calloc((size_t)count_max, sizeof(convoy__copy_t));
    b.dsts = (void **)calloc((size_t)count_max, sizeof(void *));
    b.srcs = (const void **)calloc((size_t)count_max, sizeof(void *));
    b.sizes = (size_t *)calloc((size_t)count_max, sizeof(size_t));
    if (!b.pinned || !b.pageable || !b.ref || !b.check || !b.copies || !b.dsts || !b.srcs ||
        !b.sizes) {
        fprintf(stderr, "copy_paths: out of host memory (%zu bytes per buffer): %s\n", span_max,
                convoy_last_error(ctx));
        return 1;
    }
    CK(cudaEventCreate(&b.t0));
    CK(cudaEventCreate(&b.t1));
    printf("# copy_paths: %s, methods:%s%s%s, %d repetitions after %d warm-ups, CUDA runtime "
           "%d\n",
           b.dev->name, (b.dev->methods >> CONVOY__METHOD_ENGINE) & 1u ? " engine" : "",
           (b.dev->methods >> CONVOY__METHOD_SM) & 1u ? " sm" : "", " loop", b.reps, WARMUPS,
           CUDART_VERSION);

    for (int h2d = 1; h2d >= 0; h2d--)
        for (int c = 0; c < nchunks; c++)
            for (int k = 0; k < ncounts; k++) {
                if (chunks[c] * (size_t)counts[k] > MAX_TOTAL)
                    continue;
                run_config(&b, h2d, chunks[c], counts[k], 1);
                if (chunks[c] == 8192 && counts[k] == 512)
                    run_config(&b, h2d, chunks[c], counts[k], 0);
            }
    printf("copy_paths configs=%d verified=%s\n", b.configs, b.bad ? "no" : "yes");

    CK(cudaEventDestroy(b.t0));
    CK(cudaEventDestroy(b.t1));
    b.dev->ops->mem_free(b.dev, b.dbuf);
    b.dev->ops->stream_destroy(b.dev, b.stream);
    convoy_host_free(ctx, b.pinned);
    free(b.pageable);
    free(b.ref);
    free(b.check);
    free(b.copies);
    free(b.dsts);
    free(b.srcs);
    free(b.sizes);
    convoy_fini(ctx);
    return b.bad ? 1 : 0;
}

/*
 * copy_paths: the bandwidth of each copy method of the CUDA device, against raw CUDA in
 * the same binary (PHYSICS.md s1 and s2 are the reference figures).
 *
 * For each direction (H2D, D2H), chunk size (256 B .. 8 MiB) and count (9 .. 2048), with
 * pinned host memory from convoy_host_alloc (and, for 8 KiB x 512, pageable memory too),
 * it times one memcpy_multi submission per repetition for every method the device offers
 * (engine, sm, loop) and auto, straight through the device's ops (convoy__ctx_accel),
 * beside three raw baselines: one cudaMemcpyAsync per chunk (raw_loop), one
 * cudaMemcpyBatchAsync with the attributes convoy's engine method passes (raw_batch), and
 * a hand-written gather/scatter kernel of the SM method's shape (raw_sm: one launch for
 * every chunk, descriptors written for each submission into mapped pinned host memory,
 * 16-byte loads, 256 threads, one block per chunk up to 64 KiB and one more per 64 KiB
 * after that, up to 64; pinned memory only).
 *
 * Every variant of a configuration is timed in each repetition, in an order that rotates
 * from one repetition to the next, so that a change of the machine's state during the
 * run (the copy engines' small-copy rate varies 3-5x from one minute to the next, see
 * doc/results.md) weighs on convoy and its baseline alike: the ratios are measured side
 * by side. gbs is from the median of --reps timed repetitions after 3 warm-ups, timed
 * with CUDA events recorded around the submission on the same stream, so that the host's
 * submission time counts as on an idle GPU; host_us is the median wall time of the
 * submitting call itself. Chunks sit 256 bytes apart; after the timing a fresh
 * submission of each variant copies fresh random bytes over a poisoned destination and
 * the whole range, gaps included, is checked.
 *
 * One line per convoy method and configuration:
 *   copy_paths dir=H2D chunk=8192 count=512 mem=pinned method=sm used=sm gbs=44.1
 *              host_us=9.5 raw_loop_gbs=3.0 raw_batch_gbs=10.2 raw_sm_gbs=46.0
 *              raw_host_us=4.1 ratio_raw=0.96 verified=yes
 * where ratio_raw is gbs over the raw baseline of the method used (engine: raw_batch, sm:
 * raw_sm, loop: raw_loop) and raw_host_us that baseline's host time; "na" where a
 * baseline does not apply. Last line "copy_paths configs=N verified=yes|no". Exit
 * status: 0, 1 when any submission failed or any data was wrong, 77 without a CUDA
 * device, 2 on bad options.
 *
 * A comment line first gives the host cost of the runtime calls an SM submission makes
 * (cudaSetDevice, cudaEventRecord, cudaEventQuery, a launch), so that host_us can be split
 * into those and convoy's own work.
 *
 * Options: --quick (fewer sizes, 10 repetitions), --reps N, --only-8k (the 8 KiB and
 * 1 KiB chunk configurations only); --convoy-* options go to convoy (e.g.
 * --convoy-cuda-sm-desc=device).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convoy.h"
extern "C" {
#include "device/device.h"
#include "src/context.h"
}

#define GAP 256                /* bytes between chunks: overruns land in poison */
#define MAX_TOTAL (1ull << 30) /* configurations moving more are skipped */
#define WARMUPS 3
#define POISON 0xA5
#define RAW_THREADS 256
#define RAW_BLOCK_BYTES 65536u /* raw_sm: one more block per this many bytes of a chunk */
#define RAW_MAX_BPC 64

static const size_t chunks_full[] = {256, 1024, 8192, 65536, 1u << 20, 8u << 20};
static const int counts_full[] = {9, 128, 512, 2048};
static const size_t chunks_quick[] = {1024, 8192, 65536, 1u << 20};
static const int counts_quick[] = {9, 512, 2048};
static const size_t chunks_8k[] = {1024, 8192};
static const int counts_8k[] = {512, 2048};

/* The variants of a configuration: the raw baselines, then convoy's methods. */
enum { RAW_LOOP, RAW_BATCH, RAW_SM, CV_ENGINE, CV_SM, CV_LOOP, CV_AUTO, NVARIANTS };
static const int cv_method[NVARIANTS] = {
    -1, -1, -1, CONVOY__METHOD_ENGINE, CONVOY__METHOD_SM, CONVOY__METHOD_LOOP, -1};

/* raw_sm's descriptor: both pointers valid on the device. */
struct raw_desc {
    const uint4 *src;
    uint4 *dst;
    unsigned long long vecs; /* 16-byte vectors */
    unsigned long long pad;
};

struct bench {
    convoy__device_t *dev;
    convoy__stream_t *stream;
    cudaStream_t s;
    cudaEvent_t t0, t1;
    int reps;
    unsigned char *pinned;   /* host side, convoy_host_alloc */
    unsigned char *pinned_d; /* its device pointer (raw_sm) */
    unsigned char *pageable; /* host side for the pageable configurations */
    unsigned char *dbuf;     /* device side, from the device's pool */
    unsigned char *ref;      /* the expected bytes (pageable) */
    unsigned char *check;    /* device memory read back (pageable) */
    convoy__copy_t *copies;
    void **dsts;
    const void **srcs;
    size_t *sizes;
    struct raw_desc *desc; /* raw_sm: mapped pinned, cudaHostAlloc */
    struct raw_desc *desc_d;
    size_t chunk; /* of the current configuration */
    int h2d;
    uint64_t rng;
    int configs, bad;
};

/*
 * The raw SM baseline, written apart from convoy's kernel on purpose: blockIdx.y picks
 * the chunk, blockIdx.x the block's part of it; every thread reads the descriptor itself
 * (one broadcast load per warp) and keeps up to four 16-byte loads in flight before
 * storing. Chunks are 16-byte aligned multiples of 16 bytes here.
 */
__global__ void __launch_bounds__(RAW_THREADS) raw_gather(const struct raw_desc *desc)
{
    const struct raw_desc d = desc[blockIdx.y];
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < d.vecs; i += 4 * stride) {
        uint4 a = d.src[i], b2 = a, c = a, e = a;
        if (i + stride < d.vecs)
            b2 = d.src[i + stride];
        if (i + 2 * stride < d.vecs)
            c = d.src[i + 2 * stride];
        if (i + 3 * stride < d.vecs)
            e = d.src[i + 3 * stride];
        d.dst[i] = a;
        if (i + stride < d.vecs)
            d.dst[i + stride] = b2;
        if (i + 2 * stride < d.vecs)
            d.dst[i + 2 * stride] = c;
        if (i + 3 * stride < d.vecs)
            d.dst[i + 3 * stride] = e;
    }
}

__global__ void empty_kernel(void) {}

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

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Enqueue one submission of variant v over count chunks; 0, or -1 when convoy refused
 * it (the message is printed). *used_p: the method convoy used. */
static int submit(struct bench *b, int v, int count, int *used_p)
{
    if (v >= CV_ENGINE) {
        int submitted = 0, used = -1;
        convoy_status_t st = b->dev->ops->memcpy_multi(b->dev, b->stream, b->copies, count,
                                                       cv_method[v], &submitted, &used);
        if (st != CONVOY_SUCCESS) {
            fprintf(stderr, "copy_paths: memcpy_multi(%s) failed after %d of %d copies: %s\n",
                    convoy__copy_method_name(cv_method[v]), submitted, count,
                    convoy_last_error(NULL));
            return -1;
        }
        if (used_p != NULL)
            *used_p = used;
    } else if (v == RAW_LOOP) {
        for (int i = 0; i < count; i++) {
            const convoy__copy_t *c = &b->copies[i];
            CK(cudaMemcpyAsync(
                c->dst, c->src, c->bytes,
                c->dir == CONVOY__H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, b->s));
        }
    } else if (v == RAW_BATCH) {
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
    } else { /* RAW_SM: the previous submission is complete (every run synchronizes) */
        for (int i = 0; i < count; i++) {
            const convoy__copy_t *c = &b->copies[i];
            const unsigned char *src = (const unsigned char *)c->src;
            unsigned char *dst = (unsigned char *)c->dst;
            if (b->h2d)
                src = b->pinned_d + (src - b->pinned);
            else
                dst = b->pinned_d + (dst - b->pinned);
            b->desc[i].src = (const uint4 *)src;
            b->desc[i].dst = (uint4 *)dst;
            b->desc[i].vecs = c->bytes / 16;
        }
        size_t parts = (b->chunk + RAW_BLOCK_BYTES - 1) / RAW_BLOCK_BYTES;
        dim3 grid((unsigned)(parts > RAW_MAX_BPC ? RAW_MAX_BPC : parts), (unsigned)count);
        raw_gather<<<grid, RAW_THREADS, 0, b->s>>>(b->desc_d);
        CK(cudaGetLastError());
    }
    return 0;
}

/* One timed submission: the milliseconds between the events (negative when it
 * failed) and, in *host_us_p, the submitting call's wall time. */
static double run_once(struct bench *b, int v, int count, int *used_p, double *host_us_p)
{
    CK(cudaEventRecord(b->t0, b->s));
    double t = now_us();
    int rc = submit(b, v, count, used_p);
    *host_us_p = now_us() - t;
    CK(cudaEventRecord(b->t1, b->s));
    CK(cudaEventSynchronize(b->t1));
    if (rc != 0)
        return -1;
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, b->t0, b->t1));
    return ms;
}

/* One fresh submission of variant v over poisoned destinations, then every byte of the
 * span checked: chunks hold the source, gaps still hold poison. */
static int verify(struct bench *b, int v, int count, unsigned char *host)
{
    size_t chunk = b->chunk, stride = chunk + GAP, span = (size_t)count * stride;
    const unsigned char *expect;
    const unsigned char *got;
    if (b->h2d) {
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
    if (submit(b, v, count, NULL) != 0) {
        CK(cudaStreamSynchronize(b->s));
        return 0;
    }
    if (b->h2d) {
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
            fprintf(stderr,
                    "copy_paths: variant %d: chunk %d differs at byte %zu (got %02x, "
                    "want %02x)\n",
                    v, i, k, g[k], e[k]);
            return 0;
        }
        for (size_t k = chunk; k < stride; k++) {
            if (g[k] != POISON) {
                fprintf(stderr,
                        "copy_paths: variant %d: the gap after chunk %d was written at "
                        "byte %zu\n",
                        v, i, k - chunk);
                return 0;
            }
        }
    }
    return 1;
}

/* What the runtime calls that convoy's SM submission makes besides the launch cost on
 * the host (median us of 200 each, on an idle stream): the part of host_us that is not
 * convoy's own work. */
static void host_calls(struct bench *b)
{
    enum { N = 200 };
    static double t[4][N];
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    for (int i = 0; i < N; i++) {
        double t0 = now_us();
        CK(cudaSetDevice(0));
        double t1 = now_us();
        CK(cudaEventRecord(ev, b->s));
        double t2 = now_us();
        CK(cudaEventSynchronize(ev));
        double t3 = now_us();
        CK(cudaEventQuery(ev));
        double t4 = now_us();
        empty_kernel<<<1, 32, 0, b->s>>>();
        CK(cudaGetLastError());
        double t5 = now_us();
        CK(cudaStreamSynchronize(b->s));
        t[0][i] = t1 - t0;
        t[1][i] = t2 - t1;
        t[2][i] = t4 - t3;
        t[3][i] = t5 - t4;
    }
    CK(cudaEventDestroy(ev));
    printf("# copy_paths host calls (us, median of %d): cudaSetDevice %.2f cudaEventRecord %.2f "
           "cudaEventQuery %.2f launch %.2f\n",
           N, median(t[0], N), median(t[1], N), median(t[2], N), median(t[3], N));
}

static void fmt(char *buf, size_t len, int have, double x)
{
    if (have)
        snprintf(buf, len, "%.2f", x);
    else
        snprintf(buf, len, "na");
}

static void run_config(struct bench *b, int h2d, size_t chunk, int count, int pinned)
{
    size_t stride = chunk + GAP, total = chunk * (size_t)count;
    unsigned char *host = pinned ? b->pinned : b->pageable;
    b->chunk = chunk;
    b->h2d = h2d;
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
    int on[NVARIANTS], nv = 0, order[NVARIANTS];
    for (int v = 0; v < NVARIANTS; v++) {
        on[v] = 1;
        if (v == RAW_BATCH)
            on[v] = CUDART_VERSION >= 12080;
        else if (v == RAW_SM)
            on[v] = pinned && chunk % 16 == 0; /* a kernel cannot reach pageable memory */
        if (v == CV_SM)
            on[v] = pinned;
        if (on[v] && v >= CV_ENGINE && cv_method[v] >= 0)
            on[v] = (b->dev->methods >> cv_method[v]) & 1u;
        if (on[v])
            order[nv++] = v;
    }
    double *ms = (double *)calloc((size_t)NVARIANTS * b->reps, sizeof(double));
    double *hus = (double *)calloc((size_t)NVARIANTS * b->reps, sizeof(double));
    if (ms == NULL || hus == NULL) {
        fprintf(stderr, "copy_paths: out of memory\n");
        exit(1);
    }
    double gbs[NVARIANTS] = {0}, host_us[NVARIANTS] = {0};
    int used[NVARIANTS], failed[NVARIANTS] = {0};
    for (int v = 0; v < NVARIANTS; v++)
        used[v] = -1;
    for (int r = 0; r < WARMUPS + b->reps; r++) {
        for (int j = 0; j < nv; j++) {
            int v = order[(j + r) % nv]; /* each repetition starts one variant later */
            if (failed[v])
                continue;
            double h = 0, t = run_once(b, v, count, &used[v], &h);
            if (t < 0) {
                failed[v] = 1;
            } else if (r >= WARMUPS) {
                ms[v * b->reps + r - WARMUPS] = t;
                hus[v * b->reps + r - WARMUPS] = h;
            }
        }
    }
    for (int j = 0; j < nv; j++) {
        int v = order[j];
        if (failed[v])
            continue;
        double med = median(ms + v * b->reps, b->reps);
        gbs[v] = med > 0 ? (double)total / (med * 1e-3) / 1e9 : 0;
        host_us[v] = median(hus + v * b->reps, b->reps);
    }
    free(ms);
    free(hus);

    /* A raw baseline that copies wrongly makes every ratio of the line meaningless. */
    int raw_ok = 1;
    for (int v = RAW_LOOP; v <= RAW_SM; v++) {
        if (on[v] && !failed[v] && !verify(b, v, count, host)) {
            fprintf(stderr, "copy_paths: the raw baseline %d copied wrongly\n", v);
            raw_ok = 0;
        }
        raw_ok &= !(on[v] && failed[v]);
    }
    char raw_text[3][16];
    for (int v = RAW_LOOP; v <= RAW_SM; v++)
        fmt(raw_text[v], sizeof(raw_text[v]), on[v] && !failed[v], gbs[v]);
    for (int v = CV_ENGINE; v < NVARIANTS; v++) {
        if (!on[v])
            continue;
        int ok = !failed[v] && gbs[v] > 0 && verify(b, v, count, host) && raw_ok;
        b->configs++;
        b->bad += !ok;
        int u = used[v];
        int base = u == CONVOY__METHOD_ENGINE ? RAW_BATCH
                   : u == CONVOY__METHOD_SM   ? RAW_SM
                   : u == CONVOY__METHOD_LOOP ? RAW_LOOP
                                              : -1;
        int have = base >= 0 && on[base] && !failed[base] && gbs[base] > 0;
        char ratio[16], raw_host[16];
        fmt(ratio, sizeof(ratio), have, have ? gbs[v] / gbs[base] : 0);
        fmt(raw_host, sizeof(raw_host), have, have ? host_us[base] : 0);
        printf("copy_paths dir=%s chunk=%zu count=%d mem=%s method=%s used=%s gbs=%.2f "
               "host_us=%.1f raw_loop_gbs=%s raw_batch_gbs=%s raw_sm_gbs=%s raw_host_us=%s "
               "ratio_raw=%s verified=%s\n",
               h2d ? "H2D" : "D2H", chunk, count, pinned ? "pinned" : "pageable",
               convoy__copy_method_name(cv_method[v]), convoy__copy_method_name(u), gbs[v],
               host_us[v], raw_text[RAW_LOOP], raw_text[RAW_BATCH], raw_text[RAW_SM], raw_host,
               ratio, ok ? "yes" : "no");
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
    int quick = 0, only_8k = 0, reps = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--only-8k") == 0)
            only_8k = 1;
        else if (strcmp(argv[i], "--reps") == 0)
            reps = parse_int("--reps", i + 1 < argc ? argv[++i] : NULL, 1, 100000);
        else if (strncmp(argv[i], "--reps=", 7) == 0)
            reps = parse_int("--reps", argv[i] + 7, 1, 100000);
        else {
            fprintf(stderr, "usage: copy_paths [--quick] [--only-8k] [--reps N] "
                            "[--convoy-NAME=VALUE...]\n");
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
    const size_t *chunks = only_8k ? chunks_8k : quick ? chunks_quick : chunks_full;
    const int *counts = only_8k ? counts_8k : quick ? counts_quick : counts_full;
#define N_OF(a) (int)(sizeof(a) / sizeof((a)[0]))
    int nchunks = only_8k ? N_OF(chunks_8k) : quick ? N_OF(chunks_quick) : N_OF(chunks_full);
    int ncounts = only_8k ? N_OF(counts_8k) : quick ? N_OF(counts_quick) : N_OF(counts_full);
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
    if (count_max < 512)
        count_max = 512; /* the pageable configuration */

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
    /* raw_sm: the device pointer of convoy's pinned block (exact for an interior pointer,
     * unlike cudaHostGetDevicePointer) and a mapped descriptor array of its own. */
    cudaPointerAttributes pa;
    CK(cudaPointerGetAttributes(&pa, b.pinned));
    b.pinned_d = (unsigned char *)pa.devicePointer;
    CK(cudaHostAlloc((void **)&b.desc, (size_t)count_max * sizeof(*b.desc),
                     cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaHostGetDevicePointer((void **)&b.desc_d, b.desc, 0));
    if (b.pinned_d == NULL) {
        fprintf(stderr, "copy_paths: convoy's pinned memory has no device pointer\n");
        return 1;
    }
    CK(cudaEventCreate(&b.t0));
    CK(cudaEventCreate(&b.t1));
    char desc_mode[32] = "?", overlap[8] = "?", eng_max[16] = "?";
    convoy_param_get(ctx, "cuda_sm_desc", desc_mode, sizeof(desc_mode));
    convoy_param_get(ctx, "cuda_engine_overlap", overlap, sizeof(overlap));
    convoy_param_get(ctx, "cuda_engine_max_copies", eng_max, sizeof(eng_max));
    printf("# copy_paths: %s, methods:%s%s%s, %d repetitions after %d warm-ups, interleaved, "
           "CUDA runtime %d, cuda_sm_desc=%s cuda_engine_overlap=%s cuda_engine_max_copies=%s\n",
           b.dev->name, (b.dev->methods >> CONVOY__METHOD_ENGINE) & 1u ? " engine" : "",
           (b.dev->methods >> CONVOY__METHOD_SM) & 1u ? " sm" : "", " loop", b.reps, WARMUPS,
           CUDART_VERSION, desc_mode, overlap, eng_max);
    host_calls(&b);

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
    CK(cudaFreeHost(b.desc));
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

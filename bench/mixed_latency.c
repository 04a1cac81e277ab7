/*
 * mixed_latency: small tasks (--small, 8 KiB flows) inserted together with one task whose
 * input is large (--large-bytes, 64 MiB); each small task has a CPU successor. For each
 * small task it measures the time from its insertion to its successor starting to run,
 * and compares with the same small tasks run without the large one, in the same process.
 * The large task is inserted first: the arrangement where a large copy ahead of small
 * ones hurts most (PHYSICS.md section 3).
 *
 * Last line: mixed_latency sched=S device=D split=on|off large_bytes=L small_p50_us=..
 * small_p99_us=.. baseline_p50_us=.. baseline_p99_us=.. verified=yes|no
 */
#include "config.h"

#include <stdatomic.h>

#include "bench/bench_common.h"

static const char *prog = "mixed_latency";

typedef struct succ_args {
    _Atomic uint64_t *start_ns; /* where the successor writes when it starts */
    float expect;
} succ_args_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* out[i] = in[i] + 1 over the output's length: compute-trivial whatever the input size. */
static int work_cpu(const convoy_task_view_t *t, void *s)
{
    (void)s;
    const float *in = t->flows[0];
    float *out = t->flows[1];
    for (size_t i = 0; i < t->flow_bytes[1] / sizeof(float); i++)
        out[i] = in[i] + 1;
    return 0;
}

static int work_batch(const convoy_task_view_t *const *ts, int n, void *s)
{
    for (int i = 0; i < n; i++)
        work_cpu(ts[i], s);
    return 0;
}

static atomic_int bad_results;

static int successor(const convoy_task_view_t *t, void *s)
{
    (void)s;
    const succ_args_t *a = t->args;
    atomic_store(a->start_ns, now_ns());
    const float *v = t->flows[0];
    if (v[0] != a->expect)
        atomic_fetch_add(&bad_results, 1);
    return 0;
}

#if CONVOY_HAVE_CUDA
int mixed_cuda_work(const convoy_task_view_t *t, void *stream);
int mixed_cuda_work_batch(const convoy_task_view_t *const *ts, int n, void *stream);
#endif

typedef struct world {
    int nsmall;
    size_t small_bytes, large_bytes;
    float *large_in, *large_out;
    float **in, **out;
    convoy_data_t *d_large_in, *d_large_out, **d_in, **d_out;
    _Atomic uint64_t *start;
    uint64_t *insert;
} world_t;

/* One round: optionally the large task, then the small ones and their successors;
 * returns the latencies in us (nsmall values appended to lat). */
static int round_run(convoy_context_t *ctx, convoy_class_t *work, convoy_class_t *succ, world_t *w,
                     int with_large, int round, double *lat)
{
    /* Fresh inputs each round: the program writes them, so device copies are stale. */
    for (int i = 0; i < w->nsmall; i++) {
        convoy_data_acquire(w->d_in[i], CONVOY_RW);
        w->in[i][0] = (float)(round + i);
    }
    if (with_large) {
        convoy_data_acquire(w->d_large_in, CONVOY_RW);
        w->large_in[0] = (float)round;
        convoy_data_t *f[2] = {w->d_large_in, w->d_large_out};
        convoy_task_insert(ctx, work, NULL, 0, f);
    }
    for (int i = 0; i < w->nsmall; i++) {
        convoy_data_t *f[2] = {w->d_in[i], w->d_out[i]};
        w->insert[i] = now_ns();
        convoy_task_insert(ctx, work, NULL, 0, f);
        succ_args_t a = {.start_ns = &w->start[i], .expect = (float)(round + i) + 1};
        convoy_task_insert(ctx, succ, &a, sizeof(a), &w->d_out[i]);
    }
    if (convoy_wait(ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        return -1;
    }
    if (with_large && w->large_out[0] != (float)round + 1)
        atomic_fetch_add(&bad_results, 1);
    for (int i = 0; i < w->nsmall; i++)
        lat[i] = 1e-3 * (double)(atomic_load(&w->start[i]) - w->insert[i]);
    return 0;
}

static float *alloc_data(convoy_context_t *ctx, size_t bytes, convoy_data_t **d)
{
    float *p = convoy_host_alloc(ctx, bytes);
    if (p == NULL || convoy_data_new(ctx, p, bytes, d) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: out of memory for %zu bytes\n", prog, bytes);
        exit(1);
    }
    memset(p, 0, bytes);
    return p;
}

int main(int argc, char **argv)
{
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    world_t w = {.nsmall = 32, .small_bytes = 8192, .large_bytes = 64u << 20};
    int rounds = 20, each_round = 0, in_place = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--small")))
            w.nsmall = (int)bench_long(prog, "--small", v, 1, 65536);
        else if ((v = bench_opt(argc, argv, &i, "--small-bytes")))
            w.small_bytes = (size_t)bench_long(prog, "--small-bytes", v, 4, 1L << 30) & ~(size_t)3;
        else if ((v = bench_opt(argc, argv, &i, "--large-bytes")))
            w.large_bytes = (size_t)bench_long(prog, "--large-bytes", v, 4, 1L << 34) & ~(size_t)3;
        else if ((v = bench_opt(argc, argv, &i, "--rounds")))
            rounds = (int)bench_long(prog, "--rounds", v, 1, 100000);
        else if (strcmp(argv[i], "--each-round") == 0)
            each_round = 1;
        else if (strcmp(argv[i], "--inputs-in-place") == 0)
            in_place = 1; /* CONVOY_CLASS_INPUTS_IN_PLACE: the small inputs are read once */
        else {
            fprintf(stderr,
                    "usage: %s [--small N] [--small-bytes B] [--large-bytes B] "
                    "[--rounds R] [--each-round] [--inputs-in-place] [--convoy-NAME=VALUE ...]\n",
                    prog);
            return 2;
        }
    }
    convoy_access_t wm[2] = {CONVOY_READ, CONVOY_WRITE}, sm = CONVOY_READ;
    convoy_class_t *work, *succ;
    convoy_class_new(ctx, "work", 2, wm,
                     CONVOY_CLASS_BATCHABLE | (in_place ? CONVOY_CLASS_INPUTS_IN_PLACE : 0), &work);
    convoy_class_set_chore(work, CONVOY_DEVICE_CPU, work_cpu);
    convoy_class_set_chore(work, CONVOY_DEVICE_SIM, work_cpu);
    convoy_class_set_batch_chore(work, CONVOY_DEVICE_SIM, work_batch);
#if CONVOY_HAVE_CUDA
    convoy_class_set_chore(work, CONVOY_DEVICE_CUDA, mixed_cuda_work);
    convoy_class_set_batch_chore(work, CONVOY_DEVICE_CUDA, mixed_cuda_work_batch);
#endif
    convoy_class_new(ctx, "successor", 1, &sm, 0, &succ);
    convoy_class_set_chore(succ, CONVOY_DEVICE_CPU, successor);

    w.in = calloc((size_t)w.nsmall, sizeof(float *));
    w.out = calloc((size_t)w.nsmall, sizeof(float *));
    w.d_in = calloc((size_t)w.nsmall, sizeof(convoy_data_t *));
    w.d_out = calloc((size_t)w.nsmall, sizeof(convoy_data_t *));
    w.start = calloc((size_t)w.nsmall, sizeof(*w.start));
    w.insert = calloc((size_t)w.nsmall, sizeof(uint64_t));
    double *mixed = calloc((size_t)(w.nsmall * rounds), sizeof(double));
    double *base = calloc((size_t)(w.nsmall * rounds), sizeof(double));
    if (!w.in || !w.out || !w.d_in || !w.d_out || !w.start || !w.insert || !mixed || !base)
        return 1;
    w.large_in = alloc_data(ctx, w.large_bytes, &w.d_large_in);
    w.large_out = alloc_data(ctx, w.small_bytes, &w.d_large_out);
    for (int i = 0; i < w.nsmall; i++) {
        w.in[i] = alloc_data(ctx, w.small_bytes, &w.d_in[i]);
        w.out[i] = alloc_data(ctx, w.small_bytes, &w.d_out[i]);
    }
    /* Warm-up, then alternate so both arrangements see the same machine state. */
    int ok = round_run(ctx, work, succ, &w, 1, 0, mixed) == 0, done = 0;
    for (int r = 0; r < rounds && ok; r++) {
        ok = round_run(ctx, work, succ, &w, 0, 2 * r + 1, base + r * w.nsmall) == 0;
        ok = ok && round_run(ctx, work, succ, &w, 1, 2 * r + 2, mixed + r * w.nsmall) == 0;
        done += ok;
    }
    ok = ok && atomic_load(&bad_results) == 0;
    for (int r = 0; r < done && each_round; r++)
        printf("round %d baseline_p50_us=%.1f small_p50_us=%.1f\n", r,
               bench_quantile(base + r * w.nsmall, w.nsmall, 0.5),
               bench_quantile(mixed + r * w.nsmall, w.nsmall, 0.5));
    int n = w.nsmall * rounds;
    char split[64];
    convoy_param_get(ctx, "batch_split_bytes", split, sizeof(split));
    int split_on = strcmp(convoy_sched_name(ctx), "batch") == 0 && strcmp(split, "0") != 0;
    double b50 = bench_quantile(base, n, 0.5), b99 = bench_quantile(base, n, 0.99);
    double m50 = bench_quantile(mixed, n, 0.5), m99 = bench_quantile(mixed, n, 0.99);
    printf("mixed_latency sched=%s device=%s split=%s large_bytes=%zu small=%d rounds=%d "
           "small_p50_us=%.1f small_p99_us=%.1f baseline_p50_us=%.1f baseline_p99_us=%.1f "
           "ratio_p50=%.2f verified=%s\n",
           convoy_sched_name(ctx), bench_device(ctx), split_on ? "on" : "off", w.large_bytes,
           w.nsmall, rounds, m50, m99, b50, b99, b50 > 0 ? m50 / b50 : 0.0, ok ? "yes" : "no");
    convoy_fini(ctx); /* frees the data handles and their host memory */
    free(w.in);
    free(w.out);
    free(w.d_in);
    free(w.d_out);
    free((void *)w.start);
    free(w.insert);
    free(mixed);
    free(base);
    return ok ? 0 : 1;
}

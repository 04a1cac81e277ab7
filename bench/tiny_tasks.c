/*
 * tiny_tasks: independent tiny tasks, each with --inputs read flows and --outputs written
 * flows of --flow-bytes bytes, o = a + b*c (or the sum of the inputs). Data starts on the
 * host; results are read back on the host and verified. Scheduler and devices come from
 * the usual parameters (--convoy-sched=batch, CONVOY_DEVICES=sim, ...).
 *
 * --host-memory pinned (convoy_host_alloc, the default) or malloc (pageable memory the
 * program allocates itself, which convoy copies through its pinned bounce: doc/cuda.md).
 *
 * --runs K times K runs in one process, each on fresh data. With --free-behind, a run's
 * data are freed only once the next run's are set up, just before its timing starts: the
 * device copies' frees (convoy_data_free's drops, in the background) then share the
 * progress thread with the next run, as in a program that frees one phase's data while
 * the next one runs. Without it they are done while the next run's data are set up.
 *
 * Last line: tiny_tasks sched=S device=D tasks=N flow_bytes=B inputs=I outputs=O
 * host_memory=pinned|malloc batch_chore=on|off seconds=T insert_seconds=I tasks_per_s=R
 * h2d_submissions=.. h2d_copies=.. in_place_reads=.. d2h_submissions=.. d2h_copies=.. launches=..
 * verified=yes|no (in_place_reads: inputs read in host memory, --inputs-in-place)
 *
 * It exits 1 when results do not verify, 2 on bad options.
 */
#include "config.h"

#include "bench/bench_common.h"
#include "bench/tiny_tasks.h"

static const char *prog = "tiny_tasks";

typedef struct tiny_args {
    int inputs, outputs;
} tiny_args_t;

/* The kernel on one task, on the CPU (CPU and sim chores). */
static int tiny_cpu(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const tiny_args_t *a = t->args;
    size_t n = t->flow_bytes[0] / sizeof(float);
    float *const *f = (float *const *)t->flows;
    for (int o = 0; o < a->outputs; o++) {
        float *out = f[a->inputs + o];
        for (size_t i = 0; i < n; i++) {
            float v;
            if (a->inputs == 3) {
                v = f[0][i] + f[1][i] * f[2][i];
            } else {
                v = 0;
                for (int k = 0; k < a->inputs; k++)
                    v += f[k][i];
            }
            out[i] = v;
        }
    }
    return 0;
}

static int tiny_cpu_batch(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    for (int i = 0; i < n; i++)
        tiny_cpu(tasks[i], stream);
    return 0;
}

/* Input k of task t, element i: small integers, so every device computes exactly. */
static float input_value(int t, int k, size_t i)
{
    return (float)((t + 3 * k + (int)(i % 13)) % 17);
}

static float expected(int t, int inputs, size_t i)
{
    if (inputs == 3)
        return input_value(t, 0, i) + input_value(t, 1, i) * input_value(t, 2, i);
    float v = 0;
    for (int k = 0; k < inputs; k++)
        v += input_value(t, k, i);
    return v;
}

typedef struct run {
    int tasks, inputs, outputs;
    size_t flow_bytes;
    int pageable; /* buffers from malloc rather than convoy_host_alloc */
    float **buf;
    convoy_data_t **data;
} run_t;

static int run_setup(convoy_context_t *ctx, run_t *r)
{
    int nf = r->inputs + r->outputs;
    size_t nd = (size_t)r->tasks * (size_t)nf;
    r->buf = calloc(nd, sizeof(*r->buf));
    r->data = calloc(nd, sizeof(*r->data));
    if (r->buf == NULL || r->data == NULL)
        return -1;
    size_t n = r->flow_bytes / sizeof(float);
    for (int t = 0; t < r->tasks; t++) {
        for (int k = 0; k < nf; k++) {
            size_t j = (size_t)t * (size_t)nf + (size_t)k;
            r->buf[j] = r->pageable ? malloc(r->flow_bytes) : convoy_host_alloc(ctx, r->flow_bytes);
            if (r->buf[j] == NULL)
                return -1;
            for (size_t i = 0; i < n; i++)
                r->buf[j][i] = k < r->inputs ? input_value(t, k, i) : -1.0f;
            if (convoy_data_new(ctx, r->buf[j], r->flow_bytes, &r->data[j]) != CONVOY_SUCCESS)
                return -1;
        }
    }
    return 0;
}

static int run_insert(convoy_context_t *ctx, convoy_class_t *cls, run_t *r)
{
    tiny_args_t a = {.inputs = r->inputs, .outputs = r->outputs};
    int nf = r->inputs + r->outputs;
    for (int t = 0; t < r->tasks; t++)
        if (convoy_task_insert(ctx, cls, &a, sizeof(a), &r->data[(size_t)t * (size_t)nf]) !=
            CONVOY_SUCCESS) {
            fprintf(stderr, "%s: insert: %s\n", prog, convoy_last_error(ctx));
            return -1;
        }
    return 0;
}

static int run_verify(const run_t *r)
{
    int nf = r->inputs + r->outputs;
    size_t n = r->flow_bytes / sizeof(float);
    long bad = 0;
    for (int t = 0; t < r->tasks; t++)
        for (int o = 0; o < r->outputs; o++) {
            const float *out = r->buf[(size_t)t * (size_t)nf + (size_t)(r->inputs + o)];
            for (size_t i = 0; i < n; i++)
                if (out[i] != expected(t, r->inputs, i)) {
                    if (bad++ < 5)
                        fprintf(stderr, "%s: task %d output %d [%zu] = %g, expected %g\n", prog, t,
                                o, i, out[i], expected(t, r->inputs, i));
                }
        }
    return bad == 0;
}

static void run_free(convoy_context_t *ctx, run_t *r)
{
    size_t nd = (size_t)r->tasks * (size_t)(r->inputs + r->outputs);
    for (size_t j = 0; j < nd && r->data != NULL; j++) {
        convoy_data_free(r->data[j]);
        if (r->pageable)
            free(r->buf[j]);
        else
            convoy_host_free(ctx, r->buf[j]);
    }
    free(r->data);
    free(r->buf);
    r->data = NULL;
    r->buf = NULL;
}

/* One timed run on fresh data: inserted, waited for, verified, its line printed, its data
 * freed. With behind (--free-behind), the run *behind holds (when set) is freed once this
 * one is set up, just before the timing, and this one is left there in its place. */
static int timed_run(convoy_context_t *ctx, convoy_class_t *cls, run_t *r, int batch_chore,
                     run_t *behind)
{
    if (run_setup(ctx, r) != 0) {
        fprintf(stderr, "%s: out of memory for %d tasks of %zu-byte flows\n", prog, r->tasks,
                r->flow_bytes);
        return 0;
    }
    if (behind != NULL && behind->data != NULL)
        run_free(ctx, behind);
    convoy_stats_t s0, s1;
    convoy_get_stats(ctx, &s0);
    long faults0 = bench_page_faults();
    bench_timed_begin();
    double t0 = bench_now();
    int ok = run_insert(ctx, cls, r) == 0;
    double insert_secs = bench_now() - t0;
    convoy_status_t st = convoy_wait(ctx);
    double secs = bench_now() - t0;
    bench_timed_end();
    long faults = bench_page_faults() - faults0;
    convoy_get_stats(ctx, &s1);
    if (st != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        ok = 0;
    }
    ok = ok && run_verify(r);
    printf("tiny_tasks sched=%s device=%s tasks=%d flow_bytes=%zu inputs=%d outputs=%d "
           "host_memory=%s batch_chore=%s seconds=%.6f insert_seconds=%.6f tasks_per_s=%.0f "
           "h2d_submissions=%llu "
           "h2d_copies=%llu in_place_reads=%llu "
           "d2h_submissions=%llu d2h_copies=%llu launches=%llu page_faults=%ld verified=%s\n",
           convoy_sched_name(ctx), bench_device(ctx), r->tasks, r->flow_bytes, r->inputs,
           r->outputs, r->pageable ? "malloc" : "pinned", batch_chore ? "on" : "off", secs,
           insert_secs, r->tasks / secs,
           (unsigned long long)(s1.h2d_submissions - s0.h2d_submissions),
           (unsigned long long)(s1.h2d_copies - s0.h2d_copies),
           (unsigned long long)(s1.in_place_reads - s0.in_place_reads),
           (unsigned long long)(s1.d2h_submissions - s0.d2h_submissions),
           (unsigned long long)(s1.d2h_copies - s0.d2h_copies),
           (unsigned long long)(s1.launches - s0.launches), faults, ok ? "yes" : "no");
    if (behind != NULL)
        *behind = *r;
    else
        run_free(ctx, r);
    return ok;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s [--tasks N] [--runs K] [--free-behind] [--flow-bytes B] [--inputs I]\n"
            "          [--outputs O] [--batch-chore on|off] [--host-memory pinned|malloc]\n"
            "          [--baselines] [--inputs-in-place]\n"
            "          [--convoy-NAME=VALUE ...]\n",
            prog);
    exit(2);
}

int main(int argc, char **argv)
{
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    run_t r = {.tasks = 16384, .inputs = 3, .outputs = 1, .flow_bytes = 8192};
    int batch_chore = 1, baselines = 0, runs = 1, free_behind = 0, in_place = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--tasks")))
            r.tasks = (int)bench_long(prog, "--tasks", v, 1, 1 << 24);
        else if ((v = bench_opt(argc, argv, &i, "--runs")))
            runs = (int)bench_long(prog, "--runs", v, 1, 1000);
        else if ((v = bench_opt(argc, argv, &i, "--flow-bytes")))
            r.flow_bytes = (size_t)bench_long(prog, "--flow-bytes", v, 4, 1L << 30) & ~(size_t)3;
        else if ((v = bench_opt(argc, argv, &i, "--inputs")))
            r.inputs = (int)bench_long(prog, "--inputs", v, 1, CONVOY_MAX_FLOWS - 1);
        else if ((v = bench_opt(argc, argv, &i, "--outputs")))
            r.outputs = (int)bench_long(prog, "--outputs", v, 1, CONVOY_MAX_FLOWS - 1);
        else if ((v = bench_opt(argc, argv, &i, "--batch-chore")))
            batch_chore = strcmp(v, "off") != 0;
        else if ((v = bench_opt(argc, argv, &i, "--host-memory"))) {
            if (strcmp(v, "pinned") != 0 && strcmp(v, "malloc") != 0) {
                fprintf(stderr, "%s: --host-memory '%s': expected pinned or malloc\n", prog, v);
                return 2;
            }
            r.pageable = strcmp(v, "malloc") == 0;
        } else if (strcmp(argv[i], "--baselines") == 0)
            baselines = 1;
        else if (strcmp(argv[i], "--free-behind") == 0)
            free_behind = 1;
        else if (strcmp(argv[i], "--inputs-in-place") == 0)
            in_place = 1; /* CONVOY_CLASS_INPUTS_IN_PLACE: each input is read once */
        else
            usage();
    }
    if (r.inputs + r.outputs > CONVOY_MAX_FLOWS) {
        fprintf(stderr, "%s: --inputs + --outputs = %d exceeds %d flows\n", prog,
                r.inputs + r.outputs, CONVOY_MAX_FLOWS);
        return 2;
    }
    convoy_access_t modes[CONVOY_MAX_FLOWS];
    for (int k = 0; k < r.inputs + r.outputs; k++)
        modes[k] = k < r.inputs ? CONVOY_READ : CONVOY_WRITE;
    convoy_class_t *cls = NULL;
    unsigned flags = CONVOY_CLASS_BATCHABLE | (in_place ? CONVOY_CLASS_INPUTS_IN_PLACE : 0);
    if (convoy_class_new(ctx, "tiny", r.inputs + r.outputs, modes, flags, &cls) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        return 1;
    }
    convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, tiny_cpu);
    convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, tiny_cpu);
    if (batch_chore)
        convoy_class_set_batch_chore(cls, CONVOY_DEVICE_SIM, tiny_cpu_batch);
#if CONVOY_HAVE_CUDA
    convoy_class_set_chore(cls, CONVOY_DEVICE_CUDA, tiny_cuda_chore);
    if (batch_chore)
        convoy_class_set_batch_chore(cls, CONVOY_DEVICE_CUDA, tiny_cuda_batch_chore);
#endif

    /* Warm-up on data of its own: threads started, device memory pooled and touched. */
    run_t warm = r;
    /* As many tasks as the timed run, so that device memory is first touched here. */
    if (run_setup(ctx, &warm) != 0 || run_insert(ctx, cls, &warm) != 0 ||
        convoy_wait(ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: warm-up: %s\n", prog, convoy_last_error(ctx));
        return 1;
    }
    run_free(ctx, &warm);
    int ok = 1;
    run_t behind = {0}; /* --free-behind: the last run, freed after the next one's set-up */
    for (int k = 0; k < runs && ok; k++)
        ok = timed_run(ctx, cls, &r, batch_chore, free_behind ? &behind : NULL);
    if (behind.data != NULL)
        run_free(ctx, &behind);
    if (baselines) {
#if CONVOY_HAVE_CUDA
        if (convoy_accel_count(ctx) > 0 && strncmp(convoy_accel_name(ctx, 0), "cuda", 4) == 0) {
            double pc = tiny_raw_per_copy(r.tasks, r.inputs, r.outputs, r.flow_bytes);
            printf("raw_cuda arrangement=per_copy_per_task tasks=%d seconds=%.6f tasks_per_s=%.0f "
                   "verified=%s\n",
                   r.tasks, pc, pc > 0 ? r.tasks / pc : 0.0, pc > 0 ? "yes" : "no");
            for (int ring = 64; ring <= 1024; ring *= 4) {
                double rr = tiny_raw_ring(r.tasks, r.inputs, r.outputs, r.flow_bytes, ring);
                printf("raw_cuda arrangement=batched_ring_one_launch ring=%d tasks=%d "
                       "seconds=%.6f tasks_per_s=%.0f verified=%s\n",
                       ring, r.tasks, rr, rr > 0 ? r.tasks / rr : 0.0, rr > 0 ? "yes" : "no");
                ok = ok && rr > 0;
            }
            ok = ok && pc > 0;
        } else
#endif
            printf("raw_cuda baselines skipped: no CUDA device in use\n");
    }
    convoy_fini(ctx);
    return ok ? 0 : 1;
}

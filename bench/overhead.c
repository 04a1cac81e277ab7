/*
 * overhead: the runtime's own cost per task, with empty CPU tasks.
 *  - independent: each task updates its own datum (no dependencies), twice: the first
 *    pass bursts into memory the runtime has not held before (its tasks' pages are
 *    first touched then), the second runs on what the first freed;
 *  - chained: every task updates one datum (each depends on the previous);
 *  - inserters: K program threads insert independent tasks together, each on its own
 *    slice of the data (the rate of all of them, beside one thread's);
 *  - bytes per in-flight task: heap growth while N tasks wait behind a gate task.
 * Last line: overhead sched=S tasks=N tasks_per_s=R ns_per_task=T warm_ns_per_task=W
 * chain_ns_per_task=C inserters=K inserters_tasks_per_s=M bytes_per_task=B
 * page_faults=F warm_page_faults=G verified=yes|no (R and T of the first pass, F and G
 * the page faults of the two independent passes)
 */
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "bench/bench_common.h"

static const char *prog = "overhead";
static atomic_int gate_open;

static int empty(const convoy_task_view_t *t, void *s)
{
    (void)s;
    (*(long *)t->flows[0])++;
    return 0;
}

static int gate(const convoy_task_view_t *t, void *s)
{
    (void)t;
    (void)s;
    while (!atomic_load(&gate_open))
        ;
    return 0;
}

/* Insert n tasks of cls over data (one datum each, or data[0] for all when chained) and
 * wait; returns seconds. */
static double timed(convoy_context_t *ctx, convoy_class_t *cls, convoy_data_t **data, int n,
                    int chained)
{
    double t0 = bench_now();
    for (int i = 0; i < n; i++)
        if (convoy_task_insert(ctx, cls, NULL, 0, &data[chained ? 0 : i]) != CONVOY_SUCCESS) {
            fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
            exit(1);
        }
    if (convoy_wait(ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        exit(1);
    }
    return bench_now() - t0;
}

typedef struct inserter {
    convoy_context_t *ctx;
    convoy_class_t *cls;
    convoy_data_t **data;
    int n;
    pthread_barrier_t *start;
} inserter_t;

static void *inserter_main(void *p)
{
    inserter_t *a = p;
    pthread_barrier_wait(a->start);
    for (int i = 0; i < a->n; i++)
        if (convoy_task_insert(a->ctx, a->cls, NULL, 0, &a->data[i]) != CONVOY_SUCCESS) {
            fprintf(stderr, "%s: %s\n", prog, convoy_last_error(a->ctx));
            exit(1);
        }
    return NULL;
}

/* k threads insert the n independent tasks together, thread j on its own slice of
 * data; returns seconds from their start to the wait's return. */
static double timed_inserters(convoy_context_t *ctx, convoy_class_t *cls, convoy_data_t **data,
                              int n, int k)
{
    pthread_t th[64];
    inserter_t arg[64];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)k + 1);
    for (int j = 0; j < k; j++) {
        int lo = (int)((long)n * j / k), hi = (int)((long)n * (j + 1) / k);
        arg[j] = (inserter_t){.ctx = ctx, .cls = cls, .data = &data[lo], .n = hi - lo,
                              .start = &start};
        if (pthread_create(&th[j], NULL, inserter_main, &arg[j]) != 0) {
            fprintf(stderr, "%s: could not start inserter %d\n", prog, j);
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    double t0 = bench_now();
    for (int j = 0; j < k; j++)
        pthread_join(th[j], NULL);
    if (convoy_wait(ctx) != CONVOY_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, convoy_last_error(ctx));
        exit(1);
    }
    double secs = bench_now() - t0;
    pthread_barrier_destroy(&start);
    return secs;
}

int main(int argc, char **argv)
{
    convoy_context_t *ctx = bench_init(prog, &argc, &argv);
    int n = 200000, inserters = 4;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_opt(argc, argv, &i, "--tasks")))
            n = (int)bench_long(prog, "--tasks", v, 1, 1 << 26);
        else if ((v = bench_opt(argc, argv, &i, "--inserters")))
            inserters = (int)bench_long(prog, "--inserters", v, 1, 64);
        else {
            fprintf(stderr, "usage: %s [--tasks N] [--inserters K] [--convoy-NAME=VALUE ...]\n",
                    prog);
            return 2;
        }
    }
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls, *gate_cls;
    convoy_class_new(ctx, "empty", 1, &rw, CONVOY_CLASS_BATCHABLE, &cls);
    convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, empty);
    convoy_class_new(ctx, "gate", 1, &rw, 0, &gate_cls);
    convoy_class_set_chore(gate_cls, CONVOY_DEVICE_CPU, gate);

    long *vals = calloc((size_t)n, sizeof(long));
    convoy_data_t **data = malloc((size_t)n * sizeof(*data));
    if (vals == NULL || data == NULL)
        return 1;
    for (int i = 0; i < n; i++)
        convoy_data_new(ctx, &vals[i], sizeof(long), &data[i]);

    timed(ctx, cls, data, n < 10000 ? n : 10000, 0); /* warm-up */
    long faults0 = bench_page_faults();
    double indep = timed(ctx, cls, data, n, 0);
    long faults1 = bench_page_faults();
    double warm = timed(ctx, cls, data, n, 0);
    long faults2 = bench_page_faults();
    double chain = timed(ctx, cls, data, n, 1);
    double multi = timed_inserters(ctx, cls, data, n, inserters);

    /* Heap held per in-flight task: all n wait for the gate on data[0]. */
    atomic_store(&gate_open, 0);
    convoy_task_insert(ctx, gate_cls, NULL, 0, &data[0]);
    struct mallinfo2 before = mallinfo2();
    for (int i = 0; i < n; i++)
        convoy_task_insert(ctx, cls, NULL, 0, &data[0]);
    struct mallinfo2 after = mallinfo2();
    atomic_store(&gate_open, 1);
    int ok = convoy_wait(ctx) == CONVOY_SUCCESS;
    double bytes = ((double)after.uordblks - (double)before.uordblks) / n;

    /* data[0] was updated by the warm-up, the two independent passes, the chain and the
     * gated run; every other datum by the warm-up (if in its range), the independent
     * passes and the inserters. */
    long want0 = 1 + 2 + n + 1 + n;
    ok = ok && vals[0] == want0 && vals[n - 1] == (n - 1 < 10000 ? 4 : 3);
    printf("overhead sched=%s tasks=%d tasks_per_s=%.0f ns_per_task=%.0f warm_ns_per_task=%.0f "
           "chain_ns_per_task=%.0f inserters=%d inserters_tasks_per_s=%.0f bytes_per_task=%.0f "
           "page_faults=%ld warm_page_faults=%ld verified=%s\n",
           convoy_sched_name(ctx), n, n / indep, 1e9 * indep / n, 1e9 * warm / n, 1e9 * chain / n,
           inserters, n / multi, bytes, faults1 - faults0, faults2 - faults1, ok ? "yes" : "no");
    for (int i = 0; i < n; i++)
        convoy_data_free(data[i]);
    convoy_fini(ctx);
    free(data);
    free(vals);
    return ok ? 0 : 1;
}

/*
 * check_deps: dependency inference (src/task.c) against a sequential oracle. Random task
 * graphs run under every scheduler, on the CPUs, on the sim accelerator and on a mix of
 * both (data moving host <-> sim), with 1 to 8 CPU workers; each task's chore writes a
 * hash of its id and of everything it reads, so any reordering of dependent tasks, any
 * lost or repeated task and any stale copy changes the final values. Also: a datum in
 * several flows of one task, concurrent insertion from several threads, and
 * convoy_data_acquire in the middle of a stream.
 *
 * Sizes scale with CONVOY_TEST_SCALE (0.2 by default in sanitizer builds); a failure
 * prints the seed, and CONVOY_TEST_SEED=n reruns only that seed.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test_util.h"

#define MAXF 4   /* flows per class in the random graphs */
#define MAXC 8   /* classes per graph */
#define MAXD 64  /* data per graph */
#define BIGW 64  /* ints per datum in the eviction variant */
#define SMALLW 8 /* ints per datum otherwise ("a few ints") */
#define NSEEDS 20

/* ---- the chore: an order-sensitive, deterministic function of what the task reads --- */

/* The argument block of every random task: self-describing, so that one chore serves
 * every class and the oracle runs the very same code. */
typedef struct task_args {
    uint32_t id; /* the test's own task number (insertion order) */
    uint8_t nflows;
    uint8_t modes[MAXF];
} task_args_t;

/* Per-run bookkeeping the chores update (one run at a time per process). */
static _Atomic uint32_t *g_runs;        /* times each task id ran */
static atomic_ulong g_on_cpu, g_on_sim; /* tasks run per device kind */
static atomic_int g_bad_args;           /* chores that saw a wrong argument block */
static int g_flows01_alias;             /* same_datum_flows: flows 0 and 1 name one datum */
static atomic_int g_alias_apart;        /* ... and the chore saw them at two addresses */

static void compute(const task_args_t *a, void *const *flows, const size_t *bytes)
{
    uint64_t h = tu_mix(0x5eed, a->id);
    for (int f = 0; f < a->nflows; f++) {
        if (!(a->modes[f] & CONVOY_READ))
            continue;
        const uint32_t *v = flows[f];
        for (size_t k = 0; k < bytes[f] / sizeof(uint32_t); k++)
            h = tu_mix(h, v[k]);
    }
    /* Written flows after every read: a datum both read and written through two flows
     * is read before it changes, as the oracle does. */
    for (int f = 0; f < a->nflows; f++) {
        if (!(a->modes[f] & CONVOY_WRITE))
            continue;
        uint32_t *v = flows[f];
        for (size_t k = 0; k < bytes[f] / sizeof(uint32_t); k++)
            v[k] = (uint32_t)tu_mix(h, (uint64_t)f << 32 | k);
    }
}

static int run_task(const convoy_task_view_t *t, atomic_ulong *counter)
{
    const task_args_t *a = t->args;
    if (t->args_size != sizeof(*a) || a->nflows != t->nflows) {
        atomic_fetch_add(&g_bad_args, 1);
        return 1;
    }
    if (g_flows01_alias && t->flows[0] != t->flows[1])
        atomic_fetch_add(&g_alias_apart, 1);
    compute(a, t->flows, t->flow_bytes);
    if (g_runs != NULL)
        atomic_fetch_add_explicit(&g_runs[a->id], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    return 0;
}

static int chore_cpu(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    return run_task(t, &g_on_cpu);
}

/* On sim a chore is a CPU function that receives device pointers. */
static int chore_sim(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    return run_task(t, &g_on_sim);
}

static int batch_cpu(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    (void)stream;
    for (int i = 0; i < n; i++)
        if (run_task(tasks[i], &g_on_cpu) != 0)
            return 1;
    return 0;
}

static int batch_sim(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    (void)stream;
    for (int i = 0; i < n; i++)
        if (run_task(tasks[i], &g_on_sim) != 0)
            return 1;
    return 0;
}

/* ---- random graphs ------------------------------------------------------------------ */

enum { DEV_HOST, DEV_SIM, DEV_MIX, DEV_EVICT, DEV_COUNT };
static const char *const dev_names[] = {"host", "sim", "mix", "evict"};
static const char *const sched_names[] = {"fifo", "batch"};
static const int thread_counts[] = {1, 2, 4, 8};

typedef struct graph_class {
    int nflows;
    convoy_access_t modes[MAXF];
    int cpu, sim;         /* which chores it has */
    int batchable, batch; /* flag, and batch chores */
} graph_class_t;

typedef struct graph {
    uint64_t seed;
    int ndata, nclasses, ntasks;
    int words[MAXD];
    graph_class_t cls[MAXC];
} graph_t;

/* The shape of a graph depends on the seed (and, for the chores, the device mode). */
static void graph_make(graph_t *g, uint64_t seed, int dev, int ntasks)
{
    tu_rng_t r;
    tu_rng_seed(&r, seed);
    memset(g, 0, sizeof(*g));
    g->seed = seed;
    g->ntasks = ntasks;
    g->ndata = tu_rng_range(&r, 8, MAXD);
    if (dev == DEV_EVICT) /* 32..64 data of 128..256 bytes: more than sim_memory=4096 */
        g->ndata = 32 + g->ndata / 2;
    int maxw = dev == DEV_EVICT ? BIGW : SMALLW;
    for (int d = 0; d < g->ndata; d++)
        g->words[d] = tu_rng_range(&r, dev == DEV_EVICT ? maxw / 2 : 1, maxw);
    g->nclasses = tu_rng_range(&r, 2, MAXC);
    for (int c = 0; c < g->nclasses; c++) {
        graph_class_t *k = &g->cls[c];
        k->nflows = tu_rng_range(&r, 1, MAXF);
        for (int f = 0; f < k->nflows; f++)
            k->modes[f] = (convoy_access_t)tu_rng_range(&r, 1, 3);
        int where = tu_rng_range(&r, 0, 2); /* 0: CPU only, 1: sim only, 2: both */
        switch (dev) {
        case DEV_HOST: k->cpu = 1; break;
        case DEV_SIM: k->sim = 1; break;
        default:
            k->cpu = where != 1;
            k->sim = where != 0;
            break;
        }
        k->batchable = tu_rng_range(&r, 0, 1);
        k->batch = k->batchable && tu_rng_range(&r, 0, 1);
    }
    /* Make sure the mix really mixes. */
    if (dev == DEV_MIX || dev == DEV_EVICT) {
        g->cls[0].cpu = 1;
        g->cls[0].sim = 0;
        g->cls[1].cpu = 0;
        g->cls[1].sim = 1;
    }
}

typedef struct run_config {
    const char *sched;
    int dev;
    int nthreads;
} run_config_t;

static void config_of(int index, run_config_t *rc)
{
    rc->nthreads = thread_counts[index % 4];
    rc->dev = (index / 4) % DEV_COUNT;
    rc->sched = sched_names[index / (4 * DEV_COUNT)];
}

#define NCONFIGS (2 * DEV_COUNT * 4)

/* A description of the run for failure messages. */
static void describe(char *buf, size_t len, const run_config_t *rc, const graph_t *g)
{
    snprintf(buf, len,
             "seed %llu (rerun: CONVOY_TEST_SEED=%llu), sched %s, devices %s, nthreads %d, "
             "%d tasks, %d data, %d classes",
             (unsigned long long)g->seed, (unsigned long long)g->seed, rc->sched,
             dev_names[rc->dev], rc->nthreads, g->ntasks, g->ndata, g->nclasses);
}

/* Compare a datum's host memory with the oracle's. */
static void check_datum(const uint32_t *got, const uint32_t *want, int words, int d,
                        const char *when, const char *what)
{
    for (int k = 0; k < words; k++)
        if (got[k] != want[k])
            ck_abort_msg("datum %d word %d is %08x, the oracle says %08x (%s); %s", d, k, got[k],
                         want[k], when, what);
}

static void run_graph(const run_config_t *rc, const graph_t *g)
{
    char what[256];
    describe(what, sizeof(what), rc, g);
    char nthreads[8];
    snprintf(nthreads, sizeof(nthreads), "%d", rc->nthreads);
    const char *devices = rc->dev == DEV_HOST ? "host" : "sim";
    const char *memory = rc->dev == DEV_EVICT ? "4096" : "64M";
    /* A cheap cost model so that thousands of tasks finish quickly, but not zero: the
     * sim streams still complete out of step with the host. */
    convoy_context_t *ctx = tu_init((const char *const[]){"sched",
                                                          rc->sched,
                                                          "devices",
                                                          devices,
                                                          "nthreads",
                                                          nthreads,
                                                          "sim_memory",
                                                          memory,
                                                          "sim_submit_us",
                                                          "0.5",
                                                          "sim_copy_us",
                                                          "0.05",
                                                          "sim_single_copy_us",
                                                          "0.5",
                                                          "sim_launch_us",
                                                          "0.5",
                                                          "batch_max_wait_us",
                                                          "20",
                                                          "bind",
                                                          "0",
                                                          NULL});

    tu_rng_t r;
    tu_rng_seed(&r, g->seed * 7919 + 17);
    uint32_t *host[MAXD], *oracle[MAXD];
    convoy_data_t *data[MAXD];
    for (int d = 0; d < g->ndata; d++) {
        size_t bytes = (size_t)g->words[d] * sizeof(uint32_t);
        host[d] = d % 2 ? convoy_host_alloc(ctx, bytes) : malloc(bytes);
        oracle[d] = malloc(bytes);
        ck_assert(host[d] != NULL && oracle[d] != NULL);
        for (int k = 0; k < g->words[d]; k++)
            host[d][k] = oracle[d][k] = (uint32_t)tu_rng_next(&r);
        ck_assert_int_eq(convoy_data_new(ctx, host[d], bytes, &data[d]), CONVOY_SUCCESS);
    }
    convoy_class_t *cls[MAXC];
    for (int c = 0; c < g->nclasses; c++) {
        const graph_class_t *k = &g->cls[c];
        char name[16];
        snprintf(name, sizeof(name), "rand%d", c);
        ck_assert_int_eq(convoy_class_new(ctx, name, k->nflows, k->modes,
                                          k->batchable ? CONVOY_CLASS_BATCHABLE : 0, &cls[c]),
                         CONVOY_SUCCESS);
        if (k->cpu)
            ck_assert_int_eq(convoy_class_set_chore(cls[c], CONVOY_DEVICE_CPU, chore_cpu), 0);
        if (k->sim)
            ck_assert_int_eq(convoy_class_set_chore(cls[c], CONVOY_DEVICE_SIM, chore_sim), 0);
        if (k->batch && k->cpu)
            ck_assert_int_eq(convoy_class_set_batch_chore(cls[c], CONVOY_DEVICE_CPU, batch_cpu), 0);
        if (k->batch && k->sim)
            ck_assert_int_eq(convoy_class_set_batch_chore(cls[c], CONVOY_DEVICE_SIM, batch_sim), 0);
    }

    g_runs = calloc((size_t)g->ntasks, sizeof(*g_runs));
    ck_assert_ptr_nonnull(g_runs);
    atomic_store(&g_on_cpu, 0);
    atomic_store(&g_on_sim, 0);
    atomic_store(&g_bad_args, 0);
    /* A few hot data make long chains; the rest spread the graph out. */
    int hot = g->ndata < 4 ? g->ndata : 4;
    for (int i = 0; i < g->ntasks; i++) {
        int c = tu_rng_range(&r, 0, g->nclasses - 1);
        const graph_class_t *k = &g->cls[c];
        convoy_data_t *flows[MAXF];
        void *optr[MAXF];
        size_t obytes[MAXF];
        int pick[MAXF];
        for (int f = 0; f < k->nflows; f++) {
            int d;
            for (int tries = 0;; tries++) {
                d = tu_rng_range(&r, 0, 3) == 0 ? tu_rng_range(&r, 0, hot - 1)
                                                : tu_rng_range(&r, 0, g->ndata - 1);
                int dup = 0;
                for (int e = 0; e < f; e++)
                    dup |= pick[e] == d;
                /* A datum twice in one task now and then (see same_datum_flows). */
                if (!dup || tries > 8 || tu_rng_range(&r, 0, 31) == 0)
                    break;
            }
            pick[f] = d;
            flows[f] = data[d];
            optr[f] = oracle[d];
            obytes[f] = (size_t)g->words[d] * sizeof(uint32_t);
        }
        task_args_t a = {.id = (uint32_t)i, .nflows = (uint8_t)k->nflows};
        for (int f = 0; f < k->nflows; f++)
            a.modes[f] = (uint8_t)k->modes[f];
        convoy_status_t st = convoy_task_insert(ctx, cls[c], &a, sizeof(a), flows);
        ck_assert_msg(st == CONVOY_SUCCESS, "insert %d: %s; %s", i, convoy_last_error(ctx), what);
        compute(&a, optr, obytes);

        /* Now and then look at a datum mid-stream, or change it from the program. */
        int look = tu_rng_range(&r, 0, 499);
        if (look < 2) {
            int d = tu_rng_range(&r, 0, g->ndata - 1);
            convoy_access_t mode = look == 0 ? CONVOY_READ : CONVOY_RW;
            st = convoy_data_acquire(data[d], mode);
            ck_assert_msg(st == CONVOY_SUCCESS, "acquire: %s; %s", convoy_last_error(ctx), what);
            char when[64];
            snprintf(when, sizeof(when), "acquired after task %d", i);
            check_datum(host[d], oracle[d], g->words[d], d, when, what);
            if (mode == CONVOY_RW) {
                host[d][0] ^= 0xa5a5a5a5u;
                oracle[d][0] ^= 0xa5a5a5a5u;
            }
        }
    }
    convoy_status_t st = convoy_wait(ctx);
    ck_assert_msg(st == CONVOY_SUCCESS, "convoy_wait: %s; %s", convoy_last_error(ctx), what);
    ck_assert_msg(atomic_load(&g_bad_args) == 0, "chores saw bad argument blocks; %s", what);
    for (int i = 0; i < g->ntasks; i++)
        ck_assert_msg(g_runs[i] == 1, "task %d ran %u times; %s", i, g_runs[i], what);
    for (int d = 0; d < g->ndata; d++)
        check_datum(host[d], oracle[d], g->words[d], d, "after convoy_wait", what);
    unsigned long on_cpu = atomic_load(&g_on_cpu), on_sim = atomic_load(&g_on_sim);
    ck_assert_msg(on_cpu + on_sim == (unsigned long)g->ntasks, "%lu + %lu chores; %s", on_cpu,
                  on_sim, what);
    if (rc->dev == DEV_HOST)
        ck_assert_msg(on_sim == 0, "%lu tasks ran on sim; %s", on_sim, what);
    if (rc->dev == DEV_SIM)
        ck_assert_msg(on_cpu == 0, "%lu tasks ran on the CPUs; %s", on_cpu, what);
    convoy_stats_t stats;
    convoy_get_stats(ctx, &stats);
    ck_assert_int_eq(stats.tasks_inserted, (uint64_t)g->ntasks);
    ck_assert_int_eq(stats.tasks_completed, (uint64_t)g->ntasks);
    ck_assert_int_eq(stats.tasks_failed + stats.tasks_cancelled, 0);
    if (on_sim > 0) /* (a graph whose classes only write has nothing to stage in) */
        ck_assert_msg(stats.h2d_copies + stats.d2h_copies > 0, "no copies on sim; %s", what);
    if (rc->dev == DEV_EVICT && on_sim > (unsigned long)g->ntasks / 4)
        ck_assert_msg(stats.evictions > 0, "no eviction with sim_memory=4096; %s", what);

    for (int d = 0; d < g->ndata; d++)
        convoy_data_free(data[d]);
    convoy_fini(ctx);
    for (int d = 0; d < g->ndata; d++) {
        if (d % 2 == 0)
            free(host[d]); /* the odd ones were convoy_host_alloc'd: fini freed them */
        free(oracle[d]);
    }
    free(g_runs);
    g_runs = NULL;
}

START_TEST(random_graphs)
{
    /* Proves: on random graphs (1..4 flows of random modes over 8..64 data), every datum
     * ends as the sequential oracle says, each task runs exactly once, and mid-stream
     * acquires see the value as of their insertion point; for this loop index's
     * scheduler, device mode and CPU worker count, over its share of the seeds. */
    run_config_t rc;
    config_of(_i, &rc);
    int64_t only = tu_seed_override();
    double t0 = tu_now();
    int runs = 0;
    for (uint64_t seed = 1; seed <= NSEEDS; seed++) {
        /* Each (scheduler, device) pair sees every seed, spread over the thread counts. */
        if (only >= 0 ? seed != (uint64_t)only : (int)(seed % 4) != _i % 4)
            continue;
        tu_rng_t r;
        tu_rng_seed(&r, seed);
        /* Sim runs cost more per task (streams, copies): smaller graphs there. */
        int lo = rc.dev == DEV_HOST ? 3000 : 2000, hi = rc.dev == DEV_HOST ? 20000 : 8000;
        int n = tu_scaled(lo + (int)(tu_rng_next(&r) % (uint64_t)(hi - lo)), 200);
        graph_t g;
        graph_make(&g, seed, rc.dev, n);
        run_graph(&rc, &g);
        runs++;
    }
    if (only < 0)
        ck_assert_int_gt(runs, 0);
    if (getenv("CK_VERBOSITY") != NULL)
        fprintf(stderr, "random_graphs %s/%s/%d: %d runs in %.2f s\n", rc.sched, dev_names[rc.dev],
                rc.nthreads, runs, tu_now() - t0);
}
END_TEST

/* ---- a datum in several flows of one task ------------------------------------------- */

START_TEST(same_datum_flows)
{
    /* Proves: a task may name one datum in several flows (READ+WRITE, RW+READ,
     * WRITE+WRITE, READ+READ, RW+RW), and the result is as if its flows were separate
     * views of the same memory: its chore sees them at one address (on a device, its
     * fresh buffer when it writes one); on host and sim, under each scheduler. */
    static const convoy_access_t pairs[][2] = {
        {CONVOY_READ, CONVOY_WRITE},  {CONVOY_WRITE, CONVOY_READ}, {CONVOY_RW, CONVOY_READ},
        {CONVOY_WRITE, CONVOY_WRITE}, {CONVOY_READ, CONVOY_READ},  {CONVOY_RW, CONVOY_RW},
        {CONVOY_READ, CONVOY_RW}};
    const char *devices = _i & 1 ? "sim" : "host";
    const char *sched = _i & 2 ? "batch" : "fifo";
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", devices, "sched", sched,
                                                          "nthreads", "2", "bind", "0", NULL});
    enum { NP = sizeof(pairs) / sizeof(pairs[0]), W = 4, STEPS = 200 };
    convoy_class_t *cls[NP];
    for (int p = 0; p < NP; p++) {
        char name[16];
        snprintf(name, sizeof(name), "pair%d", p);
        /* Each pair class also reads and writes a second datum, so the chains cross. */
        convoy_access_t modes[3] = {pairs[p][0], pairs[p][1], CONVOY_RW};
        ck_assert_int_eq(convoy_class_new(ctx, name, 3, modes, CONVOY_CLASS_BATCHABLE, &cls[p]), 0);
        ck_assert_int_eq(convoy_class_set_chore(cls[p], CONVOY_DEVICE_CPU, chore_cpu), 0);
        ck_assert_int_eq(convoy_class_set_chore(cls[p], CONVOY_DEVICE_SIM, chore_sim), 0);
    }
    uint32_t host[3][W], oracle[3][W];
    convoy_data_t *data[3];
    g_flows01_alias = 1;
    atomic_store(&g_alias_apart, 0);
    for (int d = 0; d < 3; d++) {
        for (int k = 0; k < W; k++)
            host[d][k] = oracle[d][k] = (uint32_t)(d * 100 + k);
        ck_assert_int_eq(convoy_data_new(ctx, host[d], sizeof(host[d]), &data[d]), 0);
    }
    tu_rng_t r;
    tu_rng_seed(&r, (uint64_t)_i + 99);
    for (int i = 0; i < STEPS; i++) {
        int p = tu_rng_range(&r, 0, NP - 1);
        int d = tu_rng_range(&r, 0, 2), e = (d + 1 + tu_rng_range(&r, 0, 1)) % 3;
        convoy_data_t *flows[3] = {data[d], data[d], data[e]};
        void *optr[3] = {oracle[d], oracle[d], oracle[e]};
        size_t obytes[3] = {sizeof(oracle[0]), sizeof(oracle[0]), sizeof(oracle[0])};
        task_args_t a = {.id = (uint32_t)i,
                         .nflows = 3,
                         .modes = {(uint8_t)pairs[p][0], (uint8_t)pairs[p][1], CONVOY_RW}};
        ck_assert_int_eq(convoy_task_insert(ctx, cls[p], &a, sizeof(a), flows), CONVOY_SUCCESS);
        compute(&a, optr, obytes);
    }
    ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    g_flows01_alias = 0;
    int apart = atomic_load(&g_alias_apart);
    ck_assert_msg(apart == 0, "%d chores saw one datum's two flows at two addresses", apart);
    char what[96];
    snprintf(what, sizeof(what), "seed %d, devices %s, sched %s", _i + 99, devices, sched);
    for (int d = 0; d < 3; d++)
        check_datum(host[d], oracle[d], W, d, "after convoy_wait", what);
    convoy_fini(ctx);
}
END_TEST

/* ---- concurrent insertion ----------------------------------------------------------- */

#define NTHR 4

typedef struct inserter {
    convoy_context_t *ctx;
    convoy_class_t **cls; /* ncls classes: class c has c % 4 + 1 flows */
    int ncls;
    convoy_class_t *incr;
    convoy_data_t *shared;
    int index, ntasks, nincr;
    uint64_t seed;
    uint32_t *host[8], *oracle[8];
    convoy_data_t *data[8];
    int words[8];
    char error[256];
} inserter_t;

/* RW on the shared counter: a read-modify-write that only RW ordering keeps exact. */
static int incr_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    volatile uint64_t *v = t->flows[0];
    uint64_t x = *v;
    for (int i = 0; i < 20; i++)
        sched_yield();
    *v = x + 1;
    return 0;
}

static void *insert_main(void *p)
{
    inserter_t *in = p;
    tu_rng_t r;
    tu_rng_seed(&r, in->seed);
    for (int i = 0; i < in->ntasks; i++) {
        if (i % 16 == 5) {
            convoy_status_t st = convoy_task_insert(in->ctx, in->incr, NULL, 0, &in->shared);
            if (st != CONVOY_SUCCESS) {
                snprintf(in->error, sizeof(in->error), "increment: %s", convoy_status_name(st));
                return NULL;
            }
            in->nincr++;
        }
        int c = tu_rng_range(&r, 0, in->ncls - 1);
        int nflows = c % MAXF + 1; /* the modes as concurrent_insert declared them */
        convoy_data_t *flows[MAXF];
        void *optr[MAXF];
        size_t obytes[MAXF];
        task_args_t a = {.id = 0, .nflows = (uint8_t)nflows};
        for (int f = 0; f < nflows; f++) {
            int d = tu_rng_range(&r, 0, 7);
            flows[f] = in->data[d];
            optr[f] = in->oracle[d];
            obytes[f] = (size_t)in->words[d] * sizeof(uint32_t);
            a.modes[f] = (uint8_t)((c / MAXF % 3 + 1 + f) % 3 + 1);
        }
        a.id = (uint32_t)(in->index << 24 | i);
        convoy_status_t st = convoy_task_insert(in->ctx, in->cls[c], &a, sizeof(a), flows);
        if (st != CONVOY_SUCCESS) {
            snprintf(in->error, sizeof(in->error), "insert: %s", convoy_status_name(st));
            return NULL;
        }
        compute(&a, optr, obytes);
    }
    return NULL;
}

START_TEST(concurrent_insert)
{
    /* Proves: several threads may insert at once: each thread's tasks on its own data end
     * as its own sequential oracle says, and RW increments of one shared datum from every
     * thread serialise (the counter equals the number of increments); host and sim,
     * both schedulers. */
    const char *devices = _i & 1 ? "sim" : "host";
    const char *sched = _i & 2 ? "batch" : "fifo";
    uint64_t seed = tu_seed_override() >= 0 ? (uint64_t)tu_seed_override() : 4242 + (uint64_t)_i;
    convoy_context_t *ctx = tu_init((const char *const[]){
        "devices", devices, "sched", sched, "nthreads", "3", "bind", "0", "sim_launch_us", "0.5",
        "sim_single_copy_us", "0.5", "sim_submit_us", "0.5", NULL});
    /* 12 classes: class c has c % 4 + 1 flows, modes as insert_main computes them. */
    enum { NCLS = 12 };
    convoy_class_t *cls[NCLS];
    for (int c = 0; c < NCLS; c++) {
        int nflows = c % MAXF + 1;
        convoy_access_t modes[MAXF];
        for (int f = 0; f < nflows; f++)
            modes[f] = (convoy_access_t)((c / MAXF % 3 + 1 + f) % 3 + 1);
        char name[16];
        snprintf(name, sizeof(name), "c%d", c);
        ck_assert_int_eq(
            convoy_class_new(ctx, name, nflows, modes, c % 2 ? CONVOY_CLASS_BATCHABLE : 0, &cls[c]),
            0);
        ck_assert_int_eq(convoy_class_set_chore(cls[c], CONVOY_DEVICE_CPU, chore_cpu), 0);
        if (c % 3 != 0)
            ck_assert_int_eq(convoy_class_set_chore(cls[c], CONVOY_DEVICE_SIM, chore_sim), 0);
    }
    convoy_class_t *incr;
    convoy_access_t rw = CONVOY_RW;
    ck_assert_int_eq(convoy_class_new(ctx, "incr", 1, &rw, CONVOY_CLASS_BATCHABLE, &incr), 0);
    ck_assert_int_eq(convoy_class_set_chore(incr, CONVOY_DEVICE_CPU, incr_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(incr, CONVOY_DEVICE_SIM, incr_chore), 0);
    uint64_t counter = 0;
    convoy_data_t *shared;
    ck_assert_int_eq(convoy_data_new(ctx, &counter, sizeof(counter), &shared), 0);

    inserter_t in[NTHR];
    pthread_t th[NTHR];
    tu_rng_t r;
    tu_rng_seed(&r, seed);
    for (int t = 0; t < NTHR; t++) {
        in[t] = (inserter_t){.ctx = ctx,
                             .cls = cls,
                             .ncls = NCLS,
                             .incr = incr,
                             .shared = shared,
                             .index = t,
                             .ntasks = tu_scaled(3000, 200),
                             .seed = seed * 31 + (uint64_t)t};
        for (int d = 0; d < 8; d++) {
            in[t].words[d] = tu_rng_range(&r, 1, SMALLW);
            size_t bytes = (size_t)in[t].words[d] * sizeof(uint32_t);
            in[t].host[d] = malloc(bytes);
            in[t].oracle[d] = malloc(bytes);
            for (int k = 0; k < in[t].words[d]; k++)
                in[t].host[d][k] = in[t].oracle[d][k] = (uint32_t)tu_rng_next(&r);
            ck_assert_int_eq(convoy_data_new(ctx, in[t].host[d], bytes, &in[t].data[d]), 0);
        }
    }
    g_runs = NULL;
    for (int t = 0; t < NTHR; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, insert_main, &in[t]), 0);
    int total = 0;
    for (int t = 0; t < NTHR; t++) {
        pthread_join(th[t], NULL);
        ck_assert_msg(in[t].error[0] == '\0', "thread %d: %s (seed %llu)", t, in[t].error,
                      (unsigned long long)seed);
        total += in[t].nincr;
    }
    ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    ck_assert_msg(counter == (uint64_t)total, "counter %llu after %d RW increments (seed %llu)",
                  (unsigned long long)counter, total, (unsigned long long)seed);
    char what[96];
    snprintf(what, sizeof(what), "seed %llu, %s, %s", (unsigned long long)seed, devices, sched);
    for (int t = 0; t < NTHR; t++)
        for (int d = 0; d < 8; d++) {
            char when[64];
            snprintf(when, sizeof(when), "thread %d", t);
            check_datum(in[t].host[d], in[t].oracle[d], in[t].words[d], d, when, what);
        }
    convoy_fini(ctx);
    for (int t = 0; t < NTHR; t++)
        for (int d = 0; d < 8; d++) {
            free(in[t].host[d]);
            free(in[t].oracle[d]);
        }
}
END_TEST

/* RW on two counters: read both, yield, write both. */
static int incr2_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    volatile uint64_t *a = t->flows[0], *b = t->flows[1];
    uint64_t x = *a, y = *b;
    sched_yield();
    *a = x + 1;
    *b = y + 1;
    return 0;
}

typedef struct pair_inserter {
    convoy_context_t *ctx;
    convoy_class_t *cls;
    convoy_data_t **shared;
    int nshared, ntasks;
    uint64_t seed;
    int *touched; /* per shared counter: this thread's tasks that update it */
    convoy_status_t st;
} pair_inserter_t;

static void *pair_main(void *p)
{
    pair_inserter_t *in = p;
    tu_rng_t r;
    tu_rng_seed(&r, in->seed);
    for (int i = 0; i < in->ntasks && in->st == CONVOY_SUCCESS; i++) {
        int a = tu_rng_range(&r, 0, in->nshared - 1);
        int b = (a + tu_rng_range(&r, 1, in->nshared - 1)) % in->nshared;
        convoy_data_t *flows[2] = {in->shared[a], in->shared[b]};
        in->st = convoy_task_insert(in->ctx, in->cls, NULL, 0, flows);
        in->touched[a]++;
        in->touched[b]++;
    }
    return NULL;
}

START_TEST(concurrent_shared_pairs)
{
    /* Proves: threads inserting at once tasks that update two shared data each, named in
     * either order, neither deadlock nor lose an update: every counter ends equal to the
     * number of tasks that updated it (insertion locks each task's data in one order).
     * Host and sim, both schedulers. */
    const char *devices = _i & 1 ? "sim" : "host";
    const char *sched = _i & 2 ? "batch" : "fifo";
    uint64_t seed = tu_seed_override() >= 0 ? (uint64_t)tu_seed_override() : 777 + (uint64_t)_i;
    convoy_context_t *ctx = tu_init((const char *const[]){
        "devices", devices, "sched", sched, "nthreads", "3", "bind", "0", "sim_launch_us", "0.5",
        "sim_single_copy_us", "0.5", "sim_submit_us", "0.5", NULL});
    convoy_access_t rw[2] = {CONVOY_RW, CONVOY_RW};
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "pair", 2, rw, CONVOY_CLASS_BATCHABLE, &cls), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, incr2_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, incr2_chore), 0);
    enum { NSHARED = 5 };
    uint64_t counter[NSHARED] = {0};
    convoy_data_t *shared[NSHARED];
    for (int d = 0; d < NSHARED; d++)
        ck_assert_int_eq(convoy_data_new(ctx, &counter[d], sizeof(counter[d]), &shared[d]), 0);
    pair_inserter_t in[NTHR];
    int touched[NTHR][NSHARED];
    memset(touched, 0, sizeof(touched));
    pthread_t th[NTHR];
    for (int t = 0; t < NTHR; t++) {
        in[t] = (pair_inserter_t){.ctx = ctx,
                                  .cls = cls,
                                  .shared = shared,
                                  .nshared = NSHARED,
                                  .ntasks = tu_scaled(1500, 100),
                                  .seed = seed * 17 + (uint64_t)t,
                                  .touched = touched[t]};
        ck_assert_int_eq(pthread_create(&th[t], NULL, pair_main, &in[t]), 0);
    }
    for (int t = 0; t < NTHR; t++) {
        pthread_join(th[t], NULL);
        ck_assert_msg(in[t].st == CONVOY_SUCCESS, "thread %d: %s", t, convoy_last_error(ctx));
    }
    ck_assert_msg(convoy_wait(ctx) == CONVOY_SUCCESS, "%s", convoy_last_error(ctx));
    for (int d = 0; d < NSHARED; d++) {
        uint64_t want = 0;
        for (int t = 0; t < NTHR; t++)
            want += (uint64_t)touched[t][d];
        ck_assert_msg(counter[d] == want,
                      "counter %d is %llu after %llu updates (seed %llu, %s, %s)", d,
                      (unsigned long long)counter[d], (unsigned long long)want,
                      (unsigned long long)seed, devices, sched);
    }
    for (int d = 0; d < NSHARED; d++)
        convoy_data_free(shared[d]);
    convoy_fini(ctx);
}
END_TEST

/* Program-order test: each thread's datum holds the number of its tasks run so far. */
typedef struct order_args {
    uint32_t expect; /* the value the datum must hold when this task runs */
    uint32_t op;     /* 0: check and increment (RW), 1: check only (READ), 2: set (WRITE) */
} order_args_t;

static atomic_int g_order_errors;

static int order_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    const order_args_t *a = t->args;
    uint32_t *v = t->flows[0];
    switch (a->op) {
    case 0:
        if (*v != a->expect) {
            atomic_fetch_add(&g_order_errors, 1);
            return 1;
        }
        *v = a->expect + 1;
        break;
    case 1:
        if (*v != a->expect) {
            atomic_fetch_add(&g_order_errors, 1);
            return 1;
        }
        break;
    default: *v = a->expect + 1; break;
    }
    return 0;
}

typedef struct order_thread {
    convoy_context_t *ctx;
    convoy_class_t *cls[3]; /* RW, READ, WRITE; each also READs a shared datum */
    convoy_data_t *mine, *shared;
    int n;
    uint64_t seed;
    char error[128];
} order_thread_t;

static void *order_main(void *p)
{
    order_thread_t *o = p;
    tu_rng_t r;
    tu_rng_seed(&r, o->seed);
    uint32_t value = 0;
    for (int i = 0; i < o->n; i++) {
        int op = tu_rng_range(&r, 0, 9);
        op = op < 6 ? 0 : op < 9 ? 1 : 2;
        order_args_t a = {.expect = value, .op = (uint32_t)op};
        convoy_data_t *flows[2] = {o->mine, o->shared};
        if (convoy_task_insert(o->ctx, o->cls[op], &a, sizeof(a), flows) != CONVOY_SUCCESS) {
            snprintf(o->error, sizeof(o->error), "insert %d failed", i);
            return NULL;
        }
        if (op != 1)
            value++;
        if (i % 64 == 0)
            sched_yield();
    }
    return NULL;
}

START_TEST(concurrent_program_order)
{
    /* Proves: tasks inserted concurrently from several threads keep each thread's
     * program order on its own datum (every RW/READ/WRITE task sees exactly the value
     * its thread's earlier tasks left), while all threads' tasks share a read-only datum;
     * host and sim, both schedulers. */
    const char *devices = _i & 1 ? "sim" : "host";
    const char *sched = _i & 2 ? "batch" : "fifo";
    convoy_context_t *ctx = tu_init((const char *const[]){
        "devices", devices, "sched", sched, "nthreads", "4", "bind", "0", "sim_launch_us", "0.2",
        "sim_single_copy_us", "0.2", "sim_submit_us", "0.2", NULL});
    convoy_access_t modes[3][2] = {
        {CONVOY_RW, CONVOY_READ}, {CONVOY_READ, CONVOY_READ}, {CONVOY_WRITE, CONVOY_READ}};
    const char *names[3] = {"order_rw", "order_read", "order_write"};
    convoy_class_t *cls[3];
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(
            convoy_class_new(ctx, names[k], 2, modes[k], CONVOY_CLASS_BATCHABLE, &cls[k]), 0);
        ck_assert_int_eq(convoy_class_set_chore(cls[k], CONVOY_DEVICE_CPU, order_chore), 0);
        ck_assert_int_eq(convoy_class_set_chore(cls[k], CONVOY_DEVICE_SIM, order_chore), 0);
    }
    uint32_t shared_v = 7, mine_v[NTHR] = {0};
    convoy_data_t *shared, *mine[NTHR];
    ck_assert_int_eq(convoy_data_new(ctx, &shared_v, sizeof(shared_v), &shared), 0);
    order_thread_t o[NTHR];
    pthread_t th[NTHR];
    atomic_store(&g_order_errors, 0);
    for (int t = 0; t < NTHR; t++) {
        ck_assert_int_eq(convoy_data_new(ctx, &mine_v[t], sizeof(mine_v[t]), &mine[t]), 0);
        o[t] = (order_thread_t){.ctx = ctx,
                                .cls = {cls[0], cls[1], cls[2]},
                                .mine = mine[t],
                                .shared = shared,
                                .n = tu_scaled(4000, 300),
                                .seed = 77 + (uint64_t)t};
    }
    for (int t = 0; t < NTHR; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, order_main, &o[t]), 0);
    for (int t = 0; t < NTHR; t++) {
        pthread_join(th[t], NULL);
        ck_assert_msg(o[t].error[0] == '\0', "thread %d: %s", t, o[t].error);
    }
    convoy_status_t st = convoy_wait(ctx);
    ck_assert_msg(st == CONVOY_SUCCESS && atomic_load(&g_order_errors) == 0,
                  "%d tasks saw a value out of program order: %s", atomic_load(&g_order_errors),
                  convoy_last_error(ctx));
    /* Replay each thread's random stream for its final value. */
    for (int t = 0; t < NTHR; t++) {
        tu_rng_t r;
        tu_rng_seed(&r, o[t].seed);
        uint32_t value = 0;
        for (int i = 0; i < o[t].n; i++) {
            int op = tu_rng_range(&r, 0, 9);
            if (op < 6 || op == 9)
                value++;
        }
        ck_assert_msg(mine_v[t] == value, "thread %d's datum is %u, expected %u (seed %llu)", t,
                      mine_v[t], value, (unsigned long long)o[t].seed);
    }
    ck_assert_int_eq(shared_v, 7);
    convoy_fini(ctx);
}
END_TEST

/* ---- acquire in the middle of a stream ---------------------------------------------- */

static int add_chore(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    uint64_t *v = t->flows[0];
    const uint64_t *by = t->args;
    *v += *by;
    return 0;
}

START_TEST(acquire_mid_stream)
{
    /* Proves: convoy_data_acquire(READ) in the middle of a stream returns the value as
     * of the tasks inserted before it (later tasks are not waited for and not lost);
     * acquire(RW) lets the program change the datum and later tasks, on the CPUs or on
     * sim, start from the changed value. */
    const char *devices = _i & 1 ? "sim" : "host";
    const char *sched = _i & 2 ? "batch" : "fifo";
    convoy_context_t *ctx = tu_init((const char *const[]){"devices", devices, "sched", sched,
                                                          "nthreads", "2", "bind", "0", NULL});
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cpu, *sim;
    ck_assert_int_eq(convoy_class_new(ctx, "add_cpu", 1, &rw, 0, &cpu), 0);
    ck_assert_int_eq(convoy_class_set_chore(cpu, CONVOY_DEVICE_CPU, add_chore), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "add_any", 1, &rw, CONVOY_CLASS_BATCHABLE, &sim), 0);
    ck_assert_int_eq(convoy_class_set_chore(sim, CONVOY_DEVICE_SIM, add_chore), 0);
    ck_assert_int_eq(convoy_class_set_chore(sim, CONVOY_DEVICE_CPU, add_chore), 0);
    uint64_t value = 0, expect = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &value, sizeof(value), &d), 0);
    int n = tu_scaled(2000, 200);
    for (int i = 1; i <= n; i++) {
        uint64_t by = (uint64_t)i;
        ck_assert_int_eq(convoy_task_insert(ctx, i % 3 ? sim : cpu, &by, sizeof(by), &d), 0);
        expect += by;
        if (i % 7 == 0) {
            ck_assert_int_eq(convoy_data_acquire(d, CONVOY_READ), CONVOY_SUCCESS);
            ck_assert_msg(value == expect, "after task %d: %llu, expected %llu", i,
                          (unsigned long long)value, (unsigned long long)expect);
        }
        if (i % 50 == 0) {
            ck_assert_int_eq(convoy_data_acquire(d, CONVOY_RW), CONVOY_SUCCESS);
            ck_assert_msg(value == expect, "after task %d: %llu, expected %llu", i,
                          (unsigned long long)value, (unsigned long long)expect);
            value = expect = (uint64_t)i * 1000003u;
        }
    }
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_msg(value == expect, "%llu, expected %llu", (unsigned long long)value,
                  (unsigned long long)expect);
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("deps");
    TCase *tc = tu_tcase(s, "random", 60);
    tcase_add_loop_test(tc, random_graphs, 0, NCONFIGS);
    tc = tu_tcase(s, "flows", 30);
    tcase_add_loop_test(tc, same_datum_flows, 0, 4);
    tcase_add_loop_test(tc, acquire_mid_stream, 0, 4);
    tc = tu_tcase(s, "threads", 60);
    tcase_add_loop_test(tc, concurrent_insert, 0, 4);
    tcase_add_loop_test(tc, concurrent_shared_pairs, 0, 4);
    tcase_add_loop_test(tc, concurrent_program_order, 0, 4);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

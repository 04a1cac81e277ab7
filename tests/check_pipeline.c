/*
 * check_pipeline: the accelerator pipeline (device/pipeline.c and the files it lists) on the
 * sim device, under both schedulers: results against a sequential oracle, coherence
 * (the host holds the newest valid version after every wait), eviction, and every
 * fault-injection path of the sim (DESIGN.md, "memcpy_multi: the contract").
 *
 * The tests share one harness, the "world": data handles with host buffers of uint64
 * words, a table of task classes (CPU only, sim only, both, batchable with and without a
 * batch chore), and for every task a CPU "observer" successor that reads one datum the
 * task wrote and so runs exactly when the task succeeded (a failed or cancelled task
 * cancels it). Each chore mixes every word its readable flows hold into a digest and
 * fills its written flows from it, so any lost, stale or reordered version changes the
 * final bytes. After each convoy_wait the harness replays the tasks in insertion order
 * on private copies (the oracle), skipping the ones that did not succeed, and compares
 * every host buffer.
 *
 * The sim's cost model is set to zero latency (sim_*_us=0, fast link) unless a test
 * needs otherwise: the tests assert counters and outcomes, never timings. A hang fails
 * through Check's timeout.
 */
#include "config.h"

#include <check.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convoy.h"
#include "device/device.h"
#include "device/pipeline.h"
#include "device/sim/sim.h"
#include "src/context.h"
#include "tests/test_util.h"

/* ck_assert records its location on every call (a pipe write): too slow in the loops
 * below, which check with this and abort only on failure. */
#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

#define KiB ((size_t)1024)
#define MAX_TASKS 4096 /* tasks of the world (observers not counted) */
#define MAX_FLOWS 4

static const char *const g_scheds[] = {"fifo", "batch"};

/* ---- presets ------------------------------------------------------------------------ */

typedef struct pset {
    const char *kv[160];
    int n;
    char vals[64][48];
    int nv;
} pset_t;

static void ps_set(pset_t *p, const char *k, const char *v)
{
    ck_assert_int_lt(p->n + 3, (int)(sizeof(p->kv) / sizeof(p->kv[0])));
    p->kv[p->n++] = k;
    p->kv[p->n++] = v;
    p->kv[p->n] = NULL;
}

static void ps_setf(pset_t *p, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ps_setf(pset_t *p, const char *k, const char *fmt, ...)
{
    ck_assert_int_lt(p->nv, 64);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->vals[p->nv], sizeof(p->vals[0]), fmt, ap);
    va_end(ap);
    ps_set(p, k, p->vals[p->nv++]);
}

/* One sim device, the given scheduler, two CPU workers, a zero-latency cost model.
 * Later ps_set calls override these (the newest preset wins). */
static void ps_base(pset_t *p, const char *sched)
{
    memset(p, 0, sizeof(*p));
    ps_set(p, "devices", "sim");
    ps_set(p, "sched", sched);
    ps_set(p, "nthreads", "2");
    ps_set(p, "bind", "0");
    ps_set(p, "verbose", "error"); /* expected failures log at warn */
    ps_set(p, "sim_submit_us", "0");
    ps_set(p, "sim_copy_us", "0");
    ps_set(p, "sim_single_copy_us", "0");
    ps_set(p, "sim_launch_us", "0");
    ps_set(p, "sim_bandwidth_gbs", "1e6");
}

/* ---- task classes --------------------------------------------------------------------- */

enum { ON_CPU = 1, ON_SIM = 2 };

typedef struct cspec {
    const char *name;
    int nflows;
    convoy_access_t modes[MAX_FLOWS];
    unsigned where; /* ON_CPU | ON_SIM: the chores it has */
    int batchable;
    int batch_chore; /* a batch chore for each kind in where */
} cspec_t;

#define R CONVOY_READ
#define W CONVOY_WRITE
#define RW CONVOY_RW
static const cspec_t g_specs[] = {
    {"cpu_rw", 2, {R, RW}, ON_CPU, 0, 0},        {"cpu_w", 3, {R, R, W}, ON_CPU, 0, 0},
    {"cpu_batch", 2, {R, RW}, ON_CPU, 1, 1},     {"sim_rw", 2, {R, RW}, ON_SIM, 0, 0},
    {"sim_tiny", 4, {R, R, R, W}, ON_SIM, 1, 1}, {"sim_rw_batch", 2, {R, RW}, ON_SIM, 1, 0},
    {"sim_w2", 3, {R, W, W}, ON_SIM, 0, 0},      {"both", 2, {R, W}, ON_CPU | ON_SIM, 0, 0},
};
#undef R
#undef W
#undef RW
enum {
    S_CPU_RW,
    S_CPU_W,
    S_CPU_BATCH,
    S_SIM_RW,
    S_SIM_TINY,
    S_SIM_RW_BATCH,
    S_SIM_W2,
    S_BOTH,
    NSPECS
};
_Static_assert(sizeof(g_specs) / sizeof(g_specs[0]) == NSPECS, "spec table");

/* A class whose failing chore is known to fail only its own task: a sim-only class
 * without a batch chore (a batch chore's failure fails every task it ran). */
static int spec_can_fail(int s)
{
    return g_specs[s].where == ON_SIM && !g_specs[s].batch_chore;
}

/* The argument block of every task. */
typedef struct targs {
    uint32_t task; /* index in the world */
    uint16_t spec;
    uint16_t fail; /* the chore scribbles over its written flows and returns 7 */
    uint64_t salt;
} targs_t;

/* ---- the world -------------------------------------------------------------------------- */

typedef struct gtask {
    int spec;
    int fail;
    int data[MAX_FLOWS];
    uint64_t salt;
    uint64_t id; /* convoy's task id (insertion number, observers included) */
} gtask_t;

typedef struct world {
    convoy_context_t *ctx;
    convoy_class_t *cls[NSPECS];
    convoy_class_t *observer;
    int ndata;
    convoy_data_t **d;
    uint64_t **host;   /* what convoy reads and writes */
    uint64_t **oracle; /* the sequential result of the tasks that succeeded */
    size_t *bytes;
    gtask_t t[MAX_TASKS];
    int ntasks;
    int verified;      /* tasks checked by earlier waits */
    uint64_t next_id;  /* convoy's next task id */
    convoy_stats_t st; /* at the last wait */
    int pinned_ok;     /* device memory kept out of use on purpose (untracked transfers) */
} world_t;

static world_t *g_w;                /* for the chores' pointer checks; set before any task exists */
static atomic_int g_ran[MAX_TASKS]; /* chore runs per task */
static atomic_int g_seen[MAX_TASKS]; /* the observer ran: the task succeeded */
static atomic_int g_done[MAX_TASKS]; /* the chore ran and returned 0: the task succeeds */
static atomic_int g_host_ptr_seen;   /* a sim chore got a host pointer */
static atomic_int g_sim_batch_calls, g_sim_batch_members;

static size_t words(size_t bytes)
{
    return bytes / sizeof(uint64_t);
}

/* The chores' work: a digest of every readable flow, then each written flow filled from
 * it. Works in place on any pointers (host, device or the oracle's). */
static void compute(const cspec_t *c, const targs_t *a, void *const *flows, const size_t *bytes)
{
    uint64_t h = tu_mix(a->salt, a->task);
    for (int f = 0; f < c->nflows; f++) {
        if (!(c->modes[f] & CONVOY_READ))
            continue;
        const uint64_t *w = flows[f];
        for (size_t j = 0; j < words(bytes[f]); j++)
            h = tu_mix(h, w[j]);
    }
    for (int f = 0; f < c->nflows; f++) {
        if (!(c->modes[f] & CONVOY_WRITE))
            continue;
        uint64_t *w = flows[f];
        for (size_t j = 0; j < words(bytes[f]); j++)
            w[j] = tu_mix(h, ((uint64_t)f << 32) + j);
    }
}

static int is_host_ptr(const void *p)
{
    const world_t *w = g_w;
    for (int i = 0; w != NULL && i < w->ndata; i++) {
        const char *h = (const char *)w->host[i];
        if ((const char *)p >= h && (const char *)p < h + w->bytes[i])
            return 1;
    }
    return 0;
}

static int run_task(const convoy_task_view_t *v, int on_sim)
{
    const targs_t *a = v->args;
    const cspec_t *c = &g_specs[a->spec];
    atomic_fetch_add(&g_ran[a->task], 1);
    if (on_sim)
        for (int f = 0; f < v->nflows; f++)
            if (is_host_ptr(v->flows[f]))
                atomic_fetch_add(&g_host_ptr_seen, 1);
    if (a->fail) {
        /* A device chore that fails half-way: its device copies hold garbage now. */
        for (int f = 0; on_sim && f < c->nflows; f++)
            if (c->modes[f] & CONVOY_WRITE)
                memset(v->flows[f], 0xee, v->flow_bytes[f]);
        return 7;
    }
    compute(c, a, v->flows, v->flow_bytes);
    atomic_fetch_add(&g_done[a->task], 1);
    return 0;
}

static int cpu_chore(const convoy_task_view_t *v, void *stream)
{
    (void)stream;
    return run_task(v, 0);
}

static int sim_chore(const convoy_task_view_t *v, void *stream)
{
    (void)stream; /* NULL on sim */
    return run_task(v, 1);
}

static int cpu_batch_chore(const convoy_task_view_t *const *v, int n, void *stream)
{
    (void)stream;
    int rc = 0;
    for (int i = 0; i < n; i++)
        rc |= run_task(v[i], 0);
    return rc;
}

static int sim_batch_chore(const convoy_task_view_t *const *v, int n, void *stream)
{
    (void)stream;
    atomic_fetch_add(&g_sim_batch_calls, 1);
    atomic_fetch_add(&g_sim_batch_members, n);
    int rc = 0;
    for (int i = 0; i < n; i++)
        rc |= run_task(v[i], 1);
    return rc;
}

static int observe_chore(const convoy_task_view_t *v, void *stream)
{
    (void)stream;
    const uint32_t *task = v->args;
    atomic_fetch_add(&g_seen[*task], 1);
    return 0;
}

static void world_classes(world_t *w)
{
    for (int s = 0; s < NSPECS; s++) {
        const cspec_t *c = &g_specs[s];
        convoy_status_t st =
            convoy_class_new(w->ctx, c->name, c->nflows, c->modes,
                             c->batchable ? CONVOY_CLASS_BATCHABLE : 0, &w->cls[s]);
        ck_assert_msg(st == CONVOY_SUCCESS, "class %s: %s", c->name, convoy_last_error(w->ctx));
        if (c->where & ON_CPU) {
            ck_assert_int_eq(convoy_class_set_chore(w->cls[s], CONVOY_DEVICE_CPU, cpu_chore), 0);
            if (c->batch_chore)
                ck_assert_int_eq(
                    convoy_class_set_batch_chore(w->cls[s], CONVOY_DEVICE_CPU, cpu_batch_chore), 0);
        }
        if (c->where & ON_SIM) {
            ck_assert_int_eq(convoy_class_set_chore(w->cls[s], CONVOY_DEVICE_SIM, sim_chore), 0);
            if (c->batch_chore)
                ck_assert_int_eq(
                    convoy_class_set_batch_chore(w->cls[s], CONVOY_DEVICE_SIM, sim_batch_chore), 0);
        }
    }
    const convoy_access_t r = CONVOY_READ;
    ck_assert_int_eq(convoy_class_new(w->ctx, "observe", 1, &r, 0, &w->observer), 0);
    ck_assert_int_eq(convoy_class_set_chore(w->observer, CONVOY_DEVICE_CPU, observe_chore), 0);
}

/* Start convoy with the presets and make ndata data of the given sizes (multiples of 8),
 * filled from the seed. */
static void world_init(world_t *w, const pset_t *ps, int ndata, const size_t *sizes, uint64_t seed)
{
    memset(w, 0, sizeof(*w));
    for (int i = 0; i < MAX_TASKS; i++) { /* what an earlier test logged (CK_FORK=no) */
        atomic_store(&g_ran[i], 0);
        atomic_store(&g_seen[i], 0);
        atomic_store(&g_done[i], 0);
    }
    atomic_store(&g_host_ptr_seen, 0);
    atomic_store(&g_sim_batch_calls, 0);
    atomic_store(&g_sim_batch_members, 0);
    w->ctx = tu_init(ps->kv);
    ck_assert_int_ge(convoy_accel_count(w->ctx), 1);
    for (int i = 0; i < convoy_accel_count(w->ctx); i++)
        ck_assert(convoy__sim_is_sim(convoy__ctx_accel(w->ctx, i)));
    w->ndata = ndata;
    w->d = calloc((size_t)ndata, sizeof(*w->d));
    w->host = calloc((size_t)ndata, sizeof(*w->host));
    w->oracle = calloc((size_t)ndata, sizeof(*w->oracle));
    w->bytes = calloc((size_t)ndata, sizeof(*w->bytes));
    ck_assert(w->d && w->host && w->oracle && w->bytes);
    tu_rng_t rng;
    tu_rng_seed(&rng, seed ^ 0xda7a);
    for (int i = 0; i < ndata; i++) {
        ck_assert(sizes[i] > 0 && sizes[i] % 8 == 0);
        w->bytes[i] = sizes[i];
        w->host[i] = aligned_alloc(64, (sizes[i] + 63) / 64 * 64);
        w->oracle[i] = malloc(sizes[i]);
        ck_assert(w->host[i] != NULL && w->oracle[i] != NULL);
        for (size_t j = 0; j < words(sizes[i]); j++)
            w->host[i][j] = tu_rng_next(&rng);
        memcpy(w->oracle[i], w->host[i], sizes[i]);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->host[i], sizes[i], &w->d[i]), 0);
    }
    world_classes(w);
    g_w = w;
}

/* Insert a task (and its observer); data[] holds spec.nflows distinct data indices. */
static int world_task(world_t *w, int spec, int fail, const int *data, uint64_t salt)
{
    ck_assert_int_lt(w->ntasks, MAX_TASKS);
    const cspec_t *c = &g_specs[spec];
    int i = w->ntasks++;
    gtask_t *t = &w->t[i];
    *t = (gtask_t){.spec = spec, .fail = fail, .salt = salt};
    convoy_data_t *flows[MAX_FLOWS];
    int observed = -1;
    for (int f = 0; f < c->nflows; f++) {
        t->data[f] = data[f];
        flows[f] = w->d[data[f]];
        if (observed < 0 && (c->modes[f] & CONVOY_WRITE))
            observed = data[f];
    }
    ck_assert_int_ge(observed, 0);
    targs_t a = {.task = (uint32_t)i, .spec = (uint16_t)spec, .fail = (uint16_t)fail, .salt = salt};
    t->id = w->next_id++;
    convoy_status_t st = convoy_task_insert(w->ctx, w->cls[spec], &a, sizeof(a), flows);
    ck_assert_msg(st == CONVOY_SUCCESS, "insert: %s", convoy_last_error(w->ctx));
    uint32_t idx = (uint32_t)i;
    w->next_id++;
    st = convoy_task_insert(w->ctx, w->observer, &idx, sizeof(idx), &w->d[observed]);
    ck_assert_msg(st == CONVOY_SUCCESS, "insert observer: %s", convoy_last_error(w->ctx));
    return i;
}

/* A task of a random class on random distinct data; fail_pct percent of the tasks of
 * classes that may fail are made to fail. */
static void world_random_task_of(world_t *w, tu_rng_t *rng, int spec, int fail_pct)
{
    int data[MAX_FLOWS];
    for (int f = 0; f < g_specs[spec].nflows; f++) {
        int again;
        do {
            data[f] = tu_rng_range(rng, 0, w->ndata - 1);
            again = 0;
            for (int e = 0; e < f; e++)
                again |= data[e] == data[f];
        } while (again);
    }
    int fail = fail_pct > 0 && spec_can_fail(spec) && tu_rng_range(rng, 0, 99) < fail_pct;
    world_task(w, spec, fail, data, tu_rng_next(rng));
}

static void world_random_task(world_t *w, tu_rng_t *rng, int fail_pct)
{
    world_random_task_of(w, rng, tu_rng_range(rng, 0, NSPECS - 1), fail_pct);
}

static const char *class_in_message(const char *msg, char *buf, size_t len)
{
    const char *p = strstr(msg, "(class '");
    if (p == NULL)
        return NULL;
    p += strlen("(class '");
    size_t n = strcspn(p, "'");
    snprintf(buf, len, "%.*s", (int)n, p);
    return buf;
}

typedef struct verdict {
    convoy_status_t wait;
    int ok, failed, cancelled; /* among this wait's tasks (observers not counted) */
    char msg[1024];            /* convoy_wait's message when it failed */
} verdict_t;

/* A reader in world_wait's replay: task i (>= 0) or the observer of task -r - 1. */
static int reader_ok(int r)
{
    return r >= 0 ? atomic_load(&g_done[r]) : atomic_load(&g_seen[-r - 1]);
}

static void add_reader(int **readers, int *nreaders, int d, int r)
{
    readers[d] = realloc(readers[d], (size_t)(nreaders[d] + 1) * sizeof(int));
    ck_assert(readers[d] != NULL);
    readers[d][nreaders[d]++] = r;
}

/*
 * convoy_wait, then check this wait's tasks against the oracle:
 *  - no chore ran twice; a task succeeded exactly when its chore ran and returned 0; a
 *    task with a predecessor that did not succeed was cancelled and its chore never ran;
 *  - an observer ran only for a task that succeeded (one whose datum could not be
 *    brought home failed instead, counted as such);
 *  - strict: exactly the tasks made to fail (and not cancelled before) failed;
 *  - every host buffer equals the oracle (the replay of the tasks that succeeded): a
 *    failed task's outputs are never visible (when bringing data home failed, the wait is
 *    repeated until it succeeds);
 *  - the statistics add up, and a failed wait names a failed task, its class and why.
 * The failures of this wait stop cancelling later tasks (convoy_wait's contract), so the
 * oracle's dependency state starts afresh at each wait.
 */
static verdict_t world_wait(world_t *w, int strict)
{
    verdict_t v = {0};
    v.wait = convoy_wait(w->ctx);
    if (v.wait != CONVOY_SUCCESS)
        snprintf(v.msg, sizeof(v.msg), "%s", convoy_last_error(w->ctx));
    ck_assert_msg(v.wait == CONVOY_SUCCESS || v.wait == CONVOY_ERR_TASK_FAILED, "convoy_wait: %s",
                  convoy_status_name(v.wait));
    /* Data that could not come home stay newest on the device: a later wait retries. */
    for (int k = 0; k < 50 && strstr(convoy_last_error(w->ctx), "could not be brought home"); k++)
        if (convoy_wait(w->ctx) == CONVOY_SUCCESS)
            break;

    int nd = w->ndata;
    int *last_writer = malloc((size_t)nd * sizeof(int));
    int **readers = calloc((size_t)nd, sizeof(int *));
    int *nreaders = calloc((size_t)nd, sizeof(int));
    ck_assert(last_writer && readers && nreaders);
    for (int i = 0; i < nd; i++)
        last_writer[i] = -1;
    int expect_failed = 0, seen_total = 0, lost_observers = 0;
    for (int i = w->verified; i < w->ntasks; i++) {
        const gtask_t *t = &w->t[i];
        const cspec_t *c = &g_specs[t->spec];
        int ran = atomic_load(&g_ran[i]), ok = atomic_load(&g_done[i]);
        int seen = atomic_load(&g_seen[i]);
        REQUIRE(ran <= 1, "task %d (%s): the chore ran %d times", i, c->name, ran);
        REQUIRE(seen <= ok, "task %d: observed %d times, succeeded %d", i, seen, ok);
        seen_total += seen;
        lost_observers += ok && !seen;
        int preds_ok = 1;
        for (int f = 0; f < c->nflows; f++) {
            int d = t->data[f];
            if (last_writer[d] >= 0 && !atomic_load(&g_done[last_writer[d]]))
                preds_ok = 0;
            if (c->modes[f] & CONVOY_WRITE)
                for (int k = 0; k < nreaders[d]; k++)
                    if (!reader_ok(readers[d][k]))
                        preds_ok = 0;
        }
        if (!preds_ok)
            REQUIRE(!ok && !ran,
                    "task %d (%s) has a predecessor that did not succeed, yet it "
                    "%s",
                    i, c->name, ok ? "succeeded" : "ran");
        if (strict) {
            REQUIRE(ok == (preds_ok && !t->fail),
                    "task %d (%s, made to fail: %d, predecessors ok: %d): succeeded %d", i, c->name,
                    t->fail, preds_ok, ok);
            REQUIRE(seen == ok, "task %d (%s) succeeded but its observer did not run", i, c->name);
            expect_failed += preds_ok && t->fail;
        }
        if (ok) {
            v.ok++;
        } else if (preds_ok) {
            v.failed++;
        } else {
            v.cancelled++;
        }
        if (ok) {
            void *flows[MAX_FLOWS];
            size_t bytes[MAX_FLOWS];
            targs_t a = {.task = (uint32_t)i, .spec = (uint16_t)t->spec, .salt = t->salt};
            for (int f = 0; f < c->nflows; f++) {
                flows[f] = w->oracle[t->data[f]];
                bytes[f] = w->bytes[t->data[f]];
            }
            compute(c, &a, flows, bytes);
        }
        int observed = -1;
        for (int f = 0; f < c->nflows; f++) {
            int d = t->data[f];
            if (c->modes[f] & CONVOY_WRITE) {
                last_writer[d] = i;
                nreaders[d] = 0;
                if (observed < 0)
                    observed = d;
            } else {
                add_reader(readers, nreaders, d, i);
            }
        }
        /* The observer reads the first written datum after the task: a later writer of
         * it waits for the observer, and a failed observer cancels that writer. */
        add_reader(readers, nreaders, observed, -(i + 1));
    }
    for (int d = 0; d < nd; d++) {
        if (memcmp(w->host[d], w->oracle[d], w->bytes[d]) == 0)
            continue;
        size_t j = 0;
        while (w->host[d][j] == w->oracle[d][j])
            j++;
        ck_abort_msg("datum %d (%zu bytes): the host copy differs from the oracle at word %zu "
                     "of %zu (host %016llx, oracle %016llx)",
                     d, w->bytes[d], j, words(w->bytes[d]), (unsigned long long)w->host[d][j],
                     (unsigned long long)w->oracle[d][j]);
    }
    for (int d = 0; d < nd; d++)
        free(readers[d]);
    free(last_writer);
    free(readers);
    free(nreaders);

    /* Statistics of this wait: every task and its observer. */
    convoy_stats_t s;
    convoy_get_stats(w->ctx, &s);
    uint64_t n = (uint64_t)(w->ntasks - w->verified);
    uint64_t ins = s.tasks_inserted - w->st.tasks_inserted;
    uint64_t done = s.tasks_completed - w->st.tasks_completed;
    uint64_t failed = s.tasks_failed - w->st.tasks_failed;
    uint64_t cancelled = s.tasks_cancelled - w->st.tasks_cancelled;
    ck_assert_uint_eq(ins, 2 * n);
    ck_assert_uint_eq(done + failed + cancelled, ins);
    ck_assert_msg(done == (uint64_t)(v.ok + seen_total),
                  "%llu tasks completed, expected %d tasks and %d observers",
                  (unsigned long long)done, v.ok, seen_total);
    ck_assert_msg(failed == (uint64_t)(v.failed + lost_observers),
                  "convoy counts %llu failed tasks, the chores say %d and %d observers whose "
                  "data could not come home",
                  (unsigned long long)failed, v.failed, lost_observers);
    if (strict)
        ck_assert_int_eq(v.failed, expect_failed);
    ck_assert_int_eq(atomic_load(&g_host_ptr_seen), 0);
    if (failed == 0 && cancelled == 0) {
        ck_assert_msg(v.wait == CONVOY_SUCCESS || strstr(v.msg, "could not be brought home"),
                      "convoy_wait: %s", v.msg);
    } else {
        ck_assert_int_eq(v.wait, CONVOY_ERR_TASK_FAILED);
        if (failed > 0) {
            /* "task N (class 'X') failed: why; F task(s) failed and C were cancelled" */
            char cls[64], want[96];
            ck_assert_msg(strstr(v.msg, " failed: ") != NULL, "message: %s", v.msg);
            ck_assert_msg(class_in_message(v.msg, cls, sizeof(cls)) != NULL, "message: %s", v.msg);
            unsigned long long id;
            ck_assert_msg(sscanf(v.msg, "task %llu (class", &id) == 1, "message: %s", v.msg);
            int found = -1;
            for (int i = w->verified; i < w->ntasks; i++)
                if (w->t[i].id == id || (w->t[i].id + 1 == id && strcmp(cls, "observe") == 0))
                    found = i;
            ck_assert_msg(found >= 0, "the message names task %llu, not one of this wait's: %s", id,
                          v.msg);
            if (strcmp(cls, "observe") == 0) {
                ck_assert_msg(strstr(v.msg, " home from sim") != NULL, "message: %s", v.msg);
            } else {
                ck_assert_msg(!atomic_load(&g_done[found]),
                              "the message names task %llu, which succeeded: %s", id, v.msg);
                ck_assert_str_eq(cls, g_specs[w->t[found].spec].name);
            }
            snprintf(want, sizeof(want), "%llu task(s) failed and %llu were cancelled",
                     (unsigned long long)failed, (unsigned long long)cancelled);
            ck_assert_msg(strstr(v.msg, want) != NULL, "message \"%s\" lacks \"%s\"", v.msg, want);
        }
    }
    w->st = s;
    w->verified = w->ntasks;
    return v;
}

/* Free every handle, check the sim gave all its memory back and never held more than
 * it has, and stop convoy. */
static void world_fini(world_t *w)
{
    for (int i = 0; i < w->ndata; i++)
        convoy_data_free(w->d[i]);
    convoy__wait_quiet(w->ctx); /* the frees' drops of device copies run on their own */
    for (int k = 0; k < convoy_accel_count(w->ctx); k++) {
        convoy__device_t *dev = convoy__ctx_accel(w->ctx, k);
        convoy__sim_counters_t c;
        convoy__sim_get_counters(dev, &c);
        size_t kept = convoy__pipeline_cached_bytes(dev);
        ck_assert_msg(c.bytes_in_use == kept || w->pinned_ok,
                      "%zu bytes of %s memory still in use after every handle was freed, %zu "
                      "of them kept for reuse",
                      c.bytes_in_use, dev->name, kept);
        ck_assert_msg(c.peak_bytes <= dev->mem_capacity, "peak %zu bytes over the %zu %s has",
                      c.peak_bytes, dev->mem_capacity, dev->name);
    }
    convoy_fini(w->ctx);
    for (int i = 0; i < w->ndata; i++) {
        free(w->host[i]);
        free(w->oracle[i]);
    }
    free(w->d);
    free(w->host);
    free(w->oracle);
    free(w->bytes);
    g_w = NULL;
}

static convoy_stats_t stats(const world_t *w)
{
    convoy_stats_t s;
    convoy_get_stats(w->ctx, &s);
    return s;
}

/* Random data sizes: the first eight of 16 KiB, the rest 1-16 KiB. */
static void random_sizes(tu_rng_t *rng, size_t *sizes, int n)
{
    static const size_t choice[] = {1 * KiB, 2 * KiB, 4 * KiB, 8 * KiB, 16 * KiB};
    for (int i = 0; i < n; i++)
        sizes[i] = i < 8 ? 16 * KiB : choice[tu_rng_range(rng, 0, 4)];
}

/* Small presets the random tests share: 80 KiB of device memory for 24 data of 1-16 KiB
 * (evictions), and under batch a split size of 12 KiB, so that the 16 KiB copies travel
 * alone and ring members wait for large copies (split groups, where the batch iterations
 * of the random tests found two bugs: see the BUG notes there and in check_batch.c). */
static void ps_random(pset_t *p, const char *sched)
{
    ps_base(p, sched);
    ps_set(p, "sim_memory", "80K");
    ps_set(p, "batch_split_bytes", "12K");
}

/* The loop index of a test over schedulers and seeds. */
static void sched_and_seed(int i, const char **sched, uint64_t *seed)
{
    *sched = g_scheds[i % 2];
    int64_t over = tu_seed_override();
    *seed = over >= 0 ? (uint64_t)over : (uint64_t)(1 + i / 2);
}

#define NDATA_RANDOM 24

/* ---- tests ------------------------------------------------------------------------------ */

/* Random task graphs mixing CPU-only, sim-only, CPU-or-sim and batchable classes give
 * the sequential result under both schedulers, with device memory small enough (80 KiB
 * for 24 data of 1-16 KiB) that copies are evicted, and under batch with rings that
 * carry split copies (a 12 KiB split size); after convoy_wait every host buffer
 * is readable and current without an acquire; sim chores only ever see device memory;
 * every byte of sim memory is given back once the handles are freed. */
/* BUG (batch iterations, odd loop indices): with split groups in the rings, two bugs of
 * the pipeline showed here as wrong outputs and crashes: a member with a split copy was
 * launched without waiting for its own small inputs (check_batch: test_split_member_
 * waits_for_its_small_inputs), and later groups read the ring's class through the first
 * member's task after it completed and was freed (check_batch: test_split_group_after_
 * first_member_freed). */
START_TEST(test_random_graphs)
{
    const char *sched;
    uint64_t seed;
    sched_and_seed(_i, &sched, &seed);
    pset_t ps;
    ps_random(&ps, sched);
    tu_rng_t rng;
    tu_rng_seed(&rng, seed);
    size_t sizes[NDATA_RANDOM];
    random_sizes(&rng, sizes, NDATA_RANDOM);
    static world_t w;
    world_init(&w, &ps, NDATA_RANDOM, sizes, seed);
    int n = tu_scaled(400, 60);
    for (int i = 0; i < n; i++)
        world_random_task(&w, &rng, 0);
    verdict_t v = world_wait(&w, 1);
    ck_assert_msg(v.ok == n, "%s seed %llu: %d of %d tasks succeeded: %s", sched,
                  (unsigned long long)seed, v.ok, n, v.msg);
    convoy_stats_t s = stats(&w);
    ck_assert_msg(s.evictions > 0, "%s seed %llu: no eviction with 80 KiB of device memory", sched,
                  (unsigned long long)seed);
    ck_assert_uint_gt(s.rings, 0);
    ck_assert_uint_eq(s.retried_copies, 0);
    if (strcmp(sched, "batch") == 0) {
        /* Some copies travelled alone (split), so rings had split groups. */
        ck_assert_uint_gt(s.split_copies, 0);
    }
    /* A second round on the same data: device copies left from the first are reused or
     * refreshed, never stale. */
    for (int i = 0; i < n / 2; i++)
        world_random_task(&w, &rng, 0);
    v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, n / 2);
    world_fini(&w);
}
END_TEST

/* A chain alternating sim and CPU tasks that update the same data in place: each CPU
 * task sees the sim task's result before it (flushed home because the CPU task needs it) and
 * each sim task sees the CPU task's (the device copy it holds from before is stale and
 * is staged again). Every update folds in the previous version, so one stale or lost
 * version changes the final bytes. */
START_TEST(test_cpu_after_sim)
{
    const char *sched = g_scheds[_i];
    pset_t ps;
    ps_base(&ps, sched);
    const size_t sizes[] = {4 * KiB, 8 * KiB, 2 * KiB};
    static world_t w;
    world_init(&w, &ps, 3, sizes, 7);
    int n = tu_scaled(40, 12);
    for (int i = 0; i < n; i++) {
        static const int xa[] = {0, 1}, ab[] = {1, 2}, ba[] = {2, 1};
        switch (i % 4) {
        case 0: world_task(&w, S_SIM_RW, 0, xa, (uint64_t)i); break;  /* a on the device */
        case 1: world_task(&w, S_CPU_RW, 0, xa, (uint64_t)i); break;  /* a on the host */
        case 2: world_task(&w, S_SIM_RW, 0, ab, (uint64_t)i); break;  /* reads a, updates b */
        default: world_task(&w, S_CPU_RW, 0, ba, (uint64_t)i); break; /* reads b, updates a */
        }
    }
    verdict_t v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, n);
    /* Every sim task staged the datum the CPU task before it had changed. */
    convoy_stats_t s = stats(&w);
    ck_assert_uint_ge(s.h2d_copies, (uint64_t)(n / 2));
    /* After the wait the host holds the newest versions: an acquire changes nothing. */
    for (int d = 0; d < 3; d++) {
        ck_assert_int_eq(convoy_data_acquire(w.d[d], CONVOY_READ), CONVOY_SUCCESS);
        ck_assert_int_eq(memcmp(w.host[d], w.oracle[d], w.bytes[d]), 0);
    }
    world_fini(&w);
}
END_TEST

/* Chores that return non-zero (and leave garbage in their device copies) fail exactly
 * their own tasks and cancel exactly the tasks after them; nothing is lost: every host
 * buffer holds the newest version written by a task that succeeded; convoy_data_acquire
 * reports the data a failed task wrote; tasks inserted after the wait start from those
 * host versions (the garbage device copies are never reused). Random graphs, both
 * schedulers, small device memory. */
/* BUG (batch iterations, odd loop indices): with split groups in the rings, two bugs of
 * the pipeline showed here as wrong outputs and crashes: a member with a split copy was
 * launched without waiting for its own small inputs (check_batch: test_split_member_
 * waits_for_its_small_inputs), and later groups read the ring's class through the first
 * member's task after it completed and was freed (check_batch: test_split_group_after_
 * first_member_freed). */
START_TEST(test_chore_failures_random)
{
    const char *sched;
    uint64_t seed;
    sched_and_seed(_i, &sched, &seed);
    pset_t ps;
    ps_random(&ps, sched);
    tu_rng_t rng;
    tu_rng_seed(&rng, seed + 100);
    size_t sizes[NDATA_RANDOM];
    random_sizes(&rng, sizes, NDATA_RANDOM);
    static world_t w;
    world_init(&w, &ps, NDATA_RANDOM, sizes, seed);
    int n = tu_scaled(300, 60);
    for (int i = 0; i < n; i++) {
        if (i == n / 4)
            world_random_task_of(&w, &rng, S_SIM_RW, 100); /* at least one failure */
        else
            world_random_task(&w, &rng, 4);
    }
    int first = w.verified;
    verdict_t v = world_wait(&w, 1);
    ck_assert_msg(v.failed > 0, "%s seed %llu: no task failed", sched, (unsigned long long)seed);
    ck_assert_msg(strstr(v.msg, "chore of class '") && strstr(v.msg, "returned 7 on sim0"),
                  "message: %s", v.msg);
    /* convoy_data_acquire reports exactly the data a failed (not cancelled) task wrote. */
    char *failed_write = calloc((size_t)w.ndata, 1);
    ck_assert(failed_write != NULL);
    for (int i = first; i < w.ntasks; i++) {
        const gtask_t *t = &w.t[i];
        if (!t->fail || atomic_load(&g_ran[i]) == 0)
            continue; /* made to fail but cancelled before it ran */
        for (int f = 0; f < g_specs[t->spec].nflows; f++)
            if (g_specs[t->spec].modes[f] & CONVOY_WRITE)
                failed_write[t->data[f]] = 1;
    }
    for (int d = 0; d < w.ndata; d++) {
        convoy_status_t st = convoy_data_acquire(w.d[d], CONVOY_READ);
        ck_assert_msg(st == (failed_write[d] ? CONVOY_ERR_TASK_FAILED : CONVOY_SUCCESS),
                      "datum %d (written by a failed task: %d): acquire %s: %s", d, failed_write[d],
                      convoy_status_name(st), convoy_last_error(w.ctx));
        ck_assert_int_eq(memcmp(w.host[d], w.oracle[d], w.bytes[d]), 0);
    }
    free(failed_write);
    /* Later tasks run from the host versions. */
    for (int i = 0; i < n / 2; i++)
        world_random_task(&w, &rng, 0);
    v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, n / 2);
    world_fini(&w);
}
END_TEST

/* Every fault the sim injects at once, at random (sim_fail_every: every 13th copy
 * submission, retries included; an allocation; a launch; failing chores), on random
 * graphs under both schedulers: convoy_wait returns (no hang) with
 * CONVOY_ERR_TASK_FAILED and a message naming a failed task and its class; failed
 * tasks' successors are cancelled and never run; every datum not written by a task that
 * ran and then failed holds its newest valid version, and one that was holds either that
 * or the failed task's output; all sim memory comes back. */
/* BUG (batch iterations, odd loop indices): with split groups in the rings, two bugs of
 * the pipeline showed here as wrong outputs and crashes: a member with a split copy was
 * launched without waiting for its own small inputs (check_batch: test_split_member_
 * waits_for_its_small_inputs), and later groups read the ring's class through the first
 * member's task after it completed and was freed (check_batch: test_split_group_after_
 * first_member_freed). */
START_TEST(test_chaos_random)
{
    const char *sched;
    uint64_t seed;
    sched_and_seed(_i, &sched, &seed);
    pset_t ps;
    ps_random(&ps, sched);
    ps_set(&ps, "sim_fail_every", "13");
    ps_set(&ps, "sim_fail_alloc", "9");
    ps_set(&ps, "sim_fail_launch", "11");
    tu_rng_t rng;
    tu_rng_seed(&rng, seed + 200);
    size_t sizes[NDATA_RANDOM];
    random_sizes(&rng, sizes, NDATA_RANDOM);
    static world_t w;
    world_init(&w, &ps, NDATA_RANDOM, sizes, seed);
    int n = tu_scaled(300, 60);
    for (int i = 0; i < n; i++)
        world_random_task(&w, &rng, 2);
    verdict_t v = world_wait(&w, 0);
    ck_assert_int_eq(v.wait, CONVOY_ERR_TASK_FAILED);
    ck_assert_int_gt(v.failed, 0);
    ck_assert_int_gt(v.cancelled, 0);
    convoy__sim_counters_t c;
    convoy__sim_get_counters(convoy__ctx_accel(w.ctx, 0), &c);
    ck_assert_uint_gt(c.alloc_failures, 0);
    /* The runtime goes on: a second round after the failures were reported. */
    for (int i = 0; i < n / 3; i++)
        world_random_task(&w, &rng, 0);
    world_wait(&w, 0);
    world_fini(&w);
}
END_TEST

/* Random graphs on two sim devices with tiny memory and every kind of fault at once
 * (failed submissions, allocations, launches and event records, chore failures): data
 * written on one device and read on the other or on the CPUs move through the host
 * (rule R), dirty copies are evicted, and the results match the oracle (world_wait). */
START_TEST(test_two_devices_chaos)
{
    const char *sched;
    uint64_t seed;
    sched_and_seed(_i, &sched, &seed);
    pset_t ps;
    ps_random(&ps, sched);
    ps_set(&ps, "sim_count", "2");
    ps_set(&ps, "sim_memory", "64K");
    ps_set(&ps, "sim_fail_every", "17");
    ps_set(&ps, "sim_fail_alloc", "7");
    ps_set(&ps, "sim_fail_launch", "9");
    ps_set(&ps, "sim_fail_record", "11");
    ps_set(&ps, "sim_fail_records", "3");
    tu_rng_t rng;
    tu_rng_seed(&rng, seed + 300);
    size_t sizes[NDATA_RANDOM];
    random_sizes(&rng, sizes, NDATA_RANDOM);
    static world_t w;
    world_init(&w, &ps, NDATA_RANDOM, sizes, seed);
    ck_assert_int_eq(convoy_accel_count(w.ctx), 2);
    int n = tu_scaled(300, 60);
    for (int i = 0; i < n; i++)
        world_random_task(&w, &rng, 2);
    world_wait(&w, 0);
    for (int i = 0; i < n / 3; i++)
        world_random_task(&w, &rng, 0);
    world_wait(&w, 0);
    world_fini(&w);
}
END_TEST

/* A random graph of n tasks under ps's device faults that the runtime must absorb:
 * every task succeeds and the host holds the sequential result. */
static void random_graph_all_succeed(pset_t *ps, uint64_t seed, int n)
{
    tu_rng_t rng;
    tu_rng_seed(&rng, seed);
    size_t sizes[NDATA_RANDOM];
    random_sizes(&rng, sizes, NDATA_RANDOM);
    static world_t w;
    world_init(&w, ps, NDATA_RANDOM, sizes, seed);
    for (int i = 0; i < n; i++)
        world_random_task(&w, &rng, 0);
    verdict_t v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, n);
    world_fini(&w);
}

/* A copy submission's completion delayed by the sim (sim_delay_us) changes nothing but
 * when things happen: random graphs under both schedulers still give the sequential
 * result, with every task succeeding. */
START_TEST(test_delayed_completions)
{
    const char *sched;
    uint64_t seed;
    sched_and_seed(_i, &sched, &seed);
    pset_t ps;
    ps_base(&ps, sched);
    ps_set(&ps, "sim_memory", "80K");
    ps_set(&ps, "sim_delay_us", "300");
    random_graph_all_succeed(&ps, seed + 300, tu_scaled(150, 40));
}
END_TEST

#define TINY_N 32

/* TINY_N tasks of 3 inputs and 1 output of 8 KiB, each on its own data, inserted while
 * a ring cannot close before the last (batch_max_tasks = TINY_N, a long max_wait). */
static void tiny_tasks(world_t *w, int n)
{
    for (int i = 0; i < n; i++) {
        const int data[] = {4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3};
        world_task(w, S_SIM_TINY, 0, data, (uint64_t)i);
    }
}

static void tiny_world(world_t *w, pset_t *ps, int n)
{
    static size_t sizes[4 * TINY_N];
    for (int i = 0; i < 4 * n; i++)
        sizes[i] = 8 * KiB;
    world_init(w, ps, 4 * n, sizes, 11);
}

/* A failed copy submission is retried one copy at a time from the first copy it did not
 * enqueue (the memcpy_multi contract): under batch, the second stage-in submission of a
 * ring (32 of 96 copies; the sim enqueues 8 before failing) costs exactly 24 retried
 * copies, logged by the sim as single copies on the same stream right after the failed
 * call, and every task still succeeds. Under fifo every submission is a single copy: the
 * failed copy is either retried or fails exactly its task (whose output then keeps its
 * old value), the others succeed. */
START_TEST(test_fail_submission_retried)
{
    const char *sched = g_scheds[_i];
    pset_t ps;
    ps_base(&ps, sched);
    ps_setf(&ps, "batch_max_tasks", "%d", TINY_N);
    ps_set(&ps, "batch_max_wait_us", "1e7");
    ps_set(&ps, "batch_idle_close", "0");
    ps_set(&ps, "batch_max_copies", "32");
    ps_set(&ps, "sim_fail_submission", _i == 1 ? "2" : "5");
    ps_set(&ps, "sim_fail_submitted", "8");
    static world_t w;
    tiny_world(&w, &ps, TINY_N);
    tiny_tasks(&w, TINY_N);
    verdict_t v = world_wait(&w, 0);
    convoy_stats_t s = stats(&w);
    convoy__device_t *dev = convoy__ctx_accel(w.ctx, 0);
    convoy__sim_counters_t c;
    convoy__sim_get_counters(dev, &c);
    if (strcmp(sched, "batch") == 0) {
        ck_assert_msg(v.ok == TINY_N, "%d of %d tasks succeeded: %s", v.ok, TINY_N, v.msg);
        ck_assert_uint_eq(s.rings, 1);
        ck_assert_uint_eq(s.retried_copies, 24);
        ck_assert_uint_eq(s.h2d_submissions, 3);
        ck_assert_uint_eq(s.h2d_copies, 3 * TINY_N);
        ck_assert_uint_eq(c.submissions[CONVOY__H2D], 3 + 24);
        ck_assert_uint_eq(c.copies[CONVOY__H2D], 3 * TINY_N);
        convoy__sim_record_t rec[64];
        int nrec = convoy__sim_records(dev, rec, 64);
        ck_assert_int_ge(nrec, 3 + 24);
        ck_assert(!rec[0].failed && rec[0].copies == 32);
        ck_assert(rec[1].failed && rec[1].copies == 8 && rec[1].dir == CONVOY__H2D);
        for (int k = 2; k < 2 + 24; k++) {
            ck_assert_msg(!rec[k].failed && rec[k].copies == 1 &&
                              rec[k].method == CONVOY__METHOD_LOOP &&
                              rec[k].stream == rec[1].stream && rec[k].dir == CONVOY__H2D,
                          "record %d: copies %d, method %d, stream %d, failed %d", k, rec[k].copies,
                          rec[k].method, rec[k].stream, rec[k].failed);
        }
        ck_assert(!rec[26].failed && rec[26].copies == 32);
    } else {
        ck_assert_uint_eq(s.rings, TINY_N);
        if (v.failed == 0) {
            ck_assert_int_eq(v.ok, TINY_N);
            ck_assert_uint_eq(s.retried_copies, 1);
        } else {
            ck_assert_int_eq(v.failed, 1);
            ck_assert_int_eq(v.ok, TINY_N - 1);
            ck_assert_uint_eq(s.retried_copies, 0);
            ck_assert_msg(strstr(v.msg, "(class 'sim_tiny') failed: ") &&
                              (strstr(v.msg, "stage-in") || strstr(v.msg, "pushout")) &&
                              strstr(v.msg, "injected failure of submission 5"),
                          "message: %s", v.msg);
        }
    }
    world_fini(&w);
}
END_TEST

/* An allocation that fails (sim_fail_alloc, CONVOY_ERR_DEVICE) fails the task that
 * needed it with a device memory message naming the task and class; its successors are
 * cancelled, its output keeps its value, the memory it had taken is given back, and the
 * same task inserted again succeeds. */
START_TEST(test_fail_alloc)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    ps_set(&ps, "sim_fail_alloc", "2");
    static world_t w;
    tiny_world(&w, &ps, 2);
    const int data[] = {0, 1, 2, 3}, next[] = {3, 4, 5, 6};
    world_task(&w, S_SIM_TINY, 0, data, 1);
    world_task(&w, S_SIM_TINY, 0, next, 2); /* reads the failed task's output */
    verdict_t v = world_wait(&w, 0);
    ck_assert_int_eq(v.failed, 1);
    ck_assert_int_eq(v.cancelled, 1);
    ck_assert_msg(strstr(v.msg, "task 0 (class 'sim_tiny') failed: ") &&
                      strstr(v.msg, "device memory") && strstr(v.msg, "sim_fail_alloc") &&
                      strstr(v.msg, "1 task(s) failed and 3 were cancelled"),
                  "message: %s", v.msg);
    ck_assert_int_eq(atomic_load(&g_ran[0]), 0);
    world_task(&w, S_SIM_TINY, 0, data, 3);
    world_task(&w, S_SIM_TINY, 0, next, 4);
    v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, 2);
    world_fini(&w);
}
END_TEST

/* A launch that fails (sim_fail_launch) fails its task with a launch message naming the
 * task and class, without running the chore; a sim successor reading its output and
 * every observer after them are cancelled; convoy_wait counts 1 failed, 3 cancelled;
 * the output keeps its value; later tasks run. */
START_TEST(test_fail_launch)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    ps_set(&ps, "sim_fail_launch", "1");
    static world_t w;
    tiny_world(&w, &ps, 2);
    const int data[] = {0, 1, 2, 3}, next[] = {3, 4, 5, 6};
    world_task(&w, S_SIM_TINY, 0, data, 1);
    world_task(&w, S_SIM_TINY, 0, next, 2);
    verdict_t v = world_wait(&w, 0);
    ck_assert_int_eq(v.failed, 1);
    ck_assert_int_eq(v.cancelled, 1);
    ck_assert_int_eq(atomic_load(&g_ran[0]), 0);
    ck_assert_msg(strstr(v.msg, "task 0 (class 'sim_tiny') failed: launch on sim0 failed") &&
                      strstr(v.msg, "sim_fail_launch") &&
                      strstr(v.msg, "1 task(s) failed and 3 were cancelled"),
                  "message: %s", v.msg);
    world_task(&w, S_SIM_TINY, 0, data, 3);
    world_task(&w, S_SIM_TINY, 0, next, 4);
    v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, 2);
    world_fini(&w);
}
END_TEST

/* A sim chore that scribbles over its device copy of a datum and returns non-zero: the
 * host keeps the version before it (nothing lost), the CPU task after it is cancelled,
 * convoy_data_acquire reports the failure, and the next sim task on the datum computes
 * from the host version, not from the garbage left on the device. */
START_TEST(test_chore_failure_keeps_host)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    const size_t sizes[] = {1 * KiB, 8 * KiB};
    static world_t w;
    world_init(&w, &ps, 2, sizes, 5);
    const int xa[] = {0, 1};
    world_task(&w, S_SIM_RW, 0, xa, 1); /* the datum's version on the device and host */
    world_task(&w, S_SIM_RW, 1, xa, 2); /* fails on the device copy */
    world_task(&w, S_CPU_RW, 0, xa, 3); /* cancelled */
    verdict_t v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, 1);
    ck_assert_int_eq(v.failed, 1);
    ck_assert_int_eq(v.cancelled, 1);
    ck_assert_msg(strstr(v.msg, "task 2 (class 'sim_rw') failed: ") &&
                      strstr(v.msg, "chore of class 'sim_rw' returned 7 on sim0"),
                  "message: %s", v.msg);
    ck_assert_int_eq(convoy_data_acquire(w.d[1], CONVOY_READ), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(w.ctx, "newest valid version");
    ck_assert_int_eq(convoy_data_acquire(w.d[1], CONVOY_READ), CONVOY_SUCCESS);
    world_task(&w, S_SIM_RW, 0, xa, 4);
    world_task(&w, S_CPU_RW, 0, xa, 5);
    world_task(&w, S_SIM_RW, 0, xa, 6);
    v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, 3);
    world_fini(&w);
}
END_TEST

/* A datum larger than the device's memory fails its sim task with a message naming the
 * datum's size and the device's; nothing is allocated for it and other tasks go on. */
START_TEST(test_datum_larger_than_device)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    ps_set(&ps, "sim_memory", "64K");
    const size_t sizes[] = {1 * KiB, 128 * KiB, 8 * KiB};
    static world_t w;
    world_init(&w, &ps, 3, sizes, 3);
    world_task(&w, S_SIM_RW, 0, (const int[]){0, 1}, 1);
    world_task(&w, S_SIM_RW, 0, (const int[]){0, 2}, 2);
    verdict_t v = world_wait(&w, 0);
    ck_assert_int_eq(v.failed, 1);
    ck_assert_int_eq(v.ok, 1);
    ck_assert_int_eq(atomic_load(&g_seen[1]), 1);
    ck_assert_msg(strstr(v.msg, "task 0 (class 'sim_rw') failed: ") && strstr(v.msg, "131072") &&
                      strstr(v.msg, "65536"),
                  "message: %s", v.msg);
    convoy__sim_counters_t c;
    convoy__sim_get_counters(convoy__ctx_accel(w.ctx, 0), &c);
    ck_assert_uint_le(c.peak_bytes, 64 * KiB);
    world_fini(&w);
}
END_TEST

/* Event records that fail for a while (sim_fail_record, sim_fail_records = 3) are
 * retried: a later record on the same stream covers the same work, so random graphs
 * under both schedulers still give the sequential result with every task succeeding. */
START_TEST(test_fail_record_retried)
{
    const char *sched;
    uint64_t seed;
    sched_and_seed(_i, &sched, &seed);
    pset_t ps;
    ps_base(&ps, sched);
    ps_set(&ps, "sim_fail_record", "5");
    ps_set(&ps, "sim_fail_records", "3");
    random_graph_all_succeed(&ps, seed + 400, tu_scaled(100, 30));
}
END_TEST

/* A device that never records an event again (from the 3rd record on; issue 9, case 2):
 * nothing is abandoned in flight: the pipeline waits for the stream instead, so every
 * copy and launch is proven over, every task succeeds with its outputs whole, nothing
 * hangs and no device memory is kept out of use. */
START_TEST(test_fail_record_forever)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    ps_set(&ps, "sim_fail_record", "3");
    ps_set(&ps, "sim_fail_records", "2000000000");
    static world_t w;
    tiny_world(&w, &ps, 4);
    tiny_tasks(&w, 4);
    verdict_t v = world_wait(&w, 1);
    ck_assert_int_eq(v.wait, CONVOY_SUCCESS);
    ck_assert_int_eq(v.ok, 4);
    world_fini(&w);
}
END_TEST

/* As above, and waiting for the stream fails too (sim_fail_sync): the device is broken.
 * The tasks whose copies cannot be proven over fail with a message naming the device,
 * convoy_wait reports them, every host buffer keeps the value of the tasks that
 * succeeded, and the device memory those copies touch is never reused. When the
 * submission that cannot be proven over is a pushout home, its copy was only read: it
 * keeps its version, a later flush pushes it again, and no task fails (before, the
 * newest version was lost with it). */
START_TEST(test_fail_sync)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    ps_set(&ps, "sim_fail_record", "3");
    ps_set(&ps, "sim_fail_records", "2000000000");
    ps_set(&ps, "sim_fail_sync", "1");
    static world_t w;
    tiny_world(&w, &ps, 4);
    tiny_tasks(&w, 4);
    verdict_t v = world_wait(&w, 0);
    ck_assert_msg(v.wait == CONVOY_ERR_TASK_FAILED || v.wait == CONVOY_SUCCESS, "wait: %d %s",
                  (int)v.wait, v.msg);
    if (v.wait != CONVOY_SUCCESS) {
        ck_assert_uint_gt(stats(&w).tasks_failed, 0); /* a task, or an observer of its output */
        ck_assert_msg(strstr(v.msg, "sim0") != NULL, "message: %s", v.msg);
    }
    w.pinned_ok = 1; /* device copies whose transfers were never proven over stay out of use */
    world_fini(&w);
}
END_TEST

/* The share of the busy period a part of progress_profile's line gives: "name=Tus(S%)";
 * -1 when the line does not hold it so. */
static double profile_share(const char *line, const char *name)
{
    char key[32];
    snprintf(key, sizeof(key), " %s=", name);
    const char *at = strstr(line, key);
    double us = 0, share = -1;
    if (at == NULL || sscanf(at + strlen(key), "%lfus(%lf%%)", &us, &share) != 2 || us < 0)
        return -1;
    return share;
}

/* progress_profile prints, at the end of the device's busy period, its split by part,
 * each with its share of the period: the loop's parts add up to the whole, and each
 * piece within them is a share of it too (doc/tracing.md). */
START_TEST(test_progress_profile_line)
{
    pset_t ps;
    ps_base(&ps, g_scheds[_i]);
    ps_set(&ps, "progress_profile", "1");
    const size_t sizes[] = {8 * KiB, 8 * KiB, 8 * KiB, 8 * KiB};
    static world_t w;
    tu_capture_t cap;
    tu_capture_start(&cap);
    world_init(&w, &ps, 4, sizes, 5);
    for (int i = 0; i < 16; i++)
        world_task(&w, S_SIM_RW, 0, (const int[]){i % 4, (i + 1) % 4}, (uint64_t)i);
    verdict_t v = world_wait(&w, 1);
    world_fini(&w); /* the progress thread prints what is left as it ends */
    const char *text = tu_capture_end(&cap);
    ck_assert_int_eq(v.failed, 0);
    const char *line = strstr(text, "sim0 progress_profile: ");
    ck_assert_msg(line != NULL, "no profile line; stderr was: %s", text);
    ck_assert_msg(strstr(line, " rings of tasks") != NULL, "line: %s", line);
    static const char *const loop[] = {"outbound", "rings", "eager", "pop", "start", "idle"};
    static const char *const within[] = {"query",  "reserve", "stage",   "issue",
                                         "launch", "finish",  "complete"};
    double sum = 0;
    for (size_t k = 0; k < sizeof(loop) / sizeof(loop[0]); k++) {
        double share = profile_share(line, loop[k]);
        ck_assert_msg(share >= 0 && share <= 100, "%s: %.1f in %s", loop[k], share, line);
        sum += share;
    }
    ck_assert_msg(sum > 99.0 && sum < 101.0, "the loop's shares add up to %.1f: %s", sum, line);
    for (size_t k = 0; k < sizeof(within) / sizeof(within[0]); k++) {
        double share = profile_share(line, within[k]);
        ck_assert_msg(share >= 0 && share <= 100, "%s: %.1f in %s", within[k], share, line);
    }
    ck_assert_msg(strstr(line, "; thread: cpu=") != NULL, "line: %s", line);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pipeline");
    int seeds = tu_seed_override() >= 0 ? 1 : 4;
    TCase *tc = tu_tcase(s, "random", 60);
    tcase_add_loop_test(tc, test_random_graphs, 0, 2 * seeds);
    tcase_add_loop_test(tc, test_chore_failures_random, 0, 2 * seeds);
    tcase_add_loop_test(tc, test_chaos_random, 0, 2 * seeds);
    tcase_add_loop_test(tc, test_delayed_completions, 0, 2);
    tcase_add_loop_test(tc, test_two_devices_chaos, 0, 2 * seeds);
    tc = tu_tcase(s, "coherence", 30);
    tcase_add_loop_test(tc, test_cpu_after_sim, 0, 2);
    tcase_add_loop_test(tc, test_chore_failure_keeps_host, 0, 2);
    tcase_add_loop_test(tc, test_progress_profile_line, 0, 2);
    tc = tu_tcase(s, "faults", 30);
    tcase_add_loop_test(tc, test_fail_submission_retried, 0, 2);
    tcase_add_loop_test(tc, test_fail_alloc, 0, 2);
    tcase_add_loop_test(tc, test_fail_launch, 0, 2);
    tcase_add_loop_test(tc, test_datum_larger_than_device, 0, 2);
    tcase_add_loop_test(tc, test_fail_record_retried, 0, 2);
    tcase_add_loop_test(tc, test_fail_record_forever, 0, 2);
    tcase_add_loop_test(tc, test_fail_sync, 0, 2);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

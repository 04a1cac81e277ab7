/*
 * The pipeline tests' world (tests/pipeline_world.h says what it is): the task
 * classes and their chores, the world's tasks, and the oracle that checks every wait.
 */
#include "config.h"

#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convoy.h"
#include "device/device.h"
#include "device/pipeline.h"
#include "device/sim/sim.h"
#include "src/context.h"
#include "tests/pipeline_world.h"
#include "tests/test_util.h"

const char *const g_scheds[2] = {"fifo", "batch"};

/* ---- task classes --------------------------------------------------------------------- */

#define R CONVOY_READ
#define W CONVOY_WRITE
#define RW CONVOY_RW
const cspec_t g_specs[NSPECS] = {
    {"cpu_rw", 2, {R, RW}, ON_CPU, 0, 0},        {"cpu_w", 3, {R, R, W}, ON_CPU, 0, 0},
    {"cpu_batch", 2, {R, RW}, ON_CPU, 1, 1},     {"sim_rw", 2, {R, RW}, ON_SIM, 0, 0},
    {"sim_tiny", 4, {R, R, R, W}, ON_SIM, 1, 1}, {"sim_rw_batch", 2, {R, RW}, ON_SIM, 1, 0},
    {"sim_w2", 3, {R, W, W}, ON_SIM, 0, 0},      {"both", 2, {R, W}, ON_CPU | ON_SIM, 0, 0},
};
#undef R
#undef W
#undef RW

/* A class whose failing chore is known to fail only its own task: a sim-only class
 * without a batch chore (a batch chore's failure fails every task it ran). */
static int spec_can_fail(int s)
{
    return g_specs[s].where == ON_SIM && !g_specs[s].batch_chore;
}

/* ---- the world -------------------------------------------------------------------------- */

static world_t *g_w;          /* for the chores' pointer checks; set before any task exists */
atomic_int g_ran[MAX_TASKS];  /* chore runs per task */
atomic_int g_seen[MAX_TASKS]; /* the observer ran: the task succeeded */
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
void world_init(world_t *w, const tu_pset_t *ps, int ndata, const size_t *sizes, uint64_t seed)
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
int world_task(world_t *w, int spec, int fail, const int *data, uint64_t salt)
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
void world_random_task_of(world_t *w, tu_rng_t *rng, int spec, int fail_pct)
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

void world_random_task(world_t *w, tu_rng_t *rng, int fail_pct)
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
verdict_t world_wait(world_t *w, int strict)
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
void world_fini(world_t *w)
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

convoy_stats_t world_stats(const world_t *w)
{
    convoy_stats_t s;
    convoy_get_stats(w->ctx, &s);
    return s;
}

/* Random data sizes: the first eight of 16 KiB, the rest 1-16 KiB. */
void random_sizes(tu_rng_t *rng, size_t *sizes, int n)
{
    static const size_t choice[] = {1 * KiB, 2 * KiB, 4 * KiB, 8 * KiB, 16 * KiB};
    for (int i = 0; i < n; i++)
        sizes[i] = i < 8 ? 16 * KiB : choice[tu_rng_range(rng, 0, 4)];
}

/* Small presets the random tests share: 80 KiB of device memory for 24 data of 1-16 KiB
 * (evictions), and under batch a split size of 12 KiB, so that the 16 KiB copies travel
 * alone and ring members wait for large copies (split groups, where the batch iterations
 * of the random tests found two bugs: see the BUG notes there and in check_batch.c). */
void ps_random(tu_pset_t *p, const char *sched)
{
    tu_ps_sim(p, sched);
    tu_ps_set(p, "sim_memory", "80K");
    tu_ps_set(p, "batch_split_bytes", "12K");
}

/* The loop index of a test over schedulers and seeds. */
void sched_and_seed(int i, const char **sched, uint64_t *seed)
{
    *sched = g_scheds[i % 2];
    int64_t over = tu_seed_override();
    *seed = over >= 0 ? (uint64_t)over : (uint64_t)(1 + i / 2);
}

/* A random graph of n tasks under ps's device faults that the runtime must absorb:
 * every task succeeds and the host holds the sequential result. */
void random_graph_all_succeed(tu_pset_t *ps, uint64_t seed, int n)
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

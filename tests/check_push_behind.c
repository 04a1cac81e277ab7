/*
 * check_push_behind: outputs someone waits for at home leave behind their launch
 * (device/push_behind.c, doc/design.md "The accelerator pipeline"). On a device whose
 * launch runs the chore at once (sim_launch_inline=1 here, as every GPU), a version a
 * CPU successor reads, or that a pending convoy_wait needs, goes home on the launch's
 * stream and the task completes with it home: its CPU successors need no flush. What
 * can be lost never goes early: a failed chore's output, nor a task's whose input failed
 * to arrive. A pushout behind a launch that fails is no one's error: the version stays on
 * the device and goes home the usual way.
 *
 * Every test holds its tasks back behind a CPU "gate" task until all are inserted, so
 * that each launch sees its tasks' successors.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/sim/sim.h"
#include "src/context.h"
#include "src/core.h"
#include "tests/test_util.h"

#define N 32
#define BYTES 8192
#define OLD 0xabababab /* what an output holds at home before its task runs */

static atomic_int gate_open;

/* Holds the tasks that read g until the test opens it. */
static int gate_chore(const convoy_task_view_t *t, void *s)
{
    (void)t;
    (void)s;
    double limit = 10.0 * tu_slowdown();
    struct timespec ms = {0, 1000000};
    for (double w = 0; w < limit && !atomic_load(&gate_open); w += 1e-3)
        nanosleep(&ms, NULL);
    return 0;
}

typedef struct produce_args {
    int fail; /* the chore fails instead of writing */
} produce_args_t;

/* out = in + 1, word by word (flows: in, gate, out) */
static int produce_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    const produce_args_t *a = t->args;
    if (a->fail)
        return 7;
    const uint32_t *in = t->flows[0];
    uint32_t *out = t->flows[2];
    for (size_t i = 0; i < t->flow_bytes[2] / 4; i++)
        out[i] = in[i] + 1;
    return 0;
}

typedef struct look_args {
    int t;
} look_args_t;

static atomic_int looked_ok, looked_bad;

/* A CPU successor: finds output t holding input t + 1. */
static int look_chore(const convoy_task_view_t *v, void *s)
{
    (void)s;
    const look_args_t *a = v->args;
    const uint32_t *out = v->flows[0];
    int ok = 1;
    for (size_t i = 0; i < v->flow_bytes[0] / 4; i++)
        ok &= out[i] == (uint32_t)(a->t + i) + 1;
    atomic_fetch_add(ok ? &looked_ok : &looked_bad, 1);
    return 0;
}

typedef struct world {
    convoy_context_t *ctx;
    convoy_class_t *gate, *produce, *look;
    uint32_t *in[N], *out[N], *g;
    convoy_data_t *din[N], *dout[N], *dg;
} world_t;

/* A sim context with zero costs, sim_launch_inline (unless inline_launch is 0), rings of
 * N, and the presets in extra (NULL-terminated; may be NULL). */
static void world_open(world_t *w, int inline_launch, const char *const *extra)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, "batch");
    tu_ps_set(&ps, "sim_launch_inline", inline_launch ? "1" : "0");
    tu_ps_set(&ps, "batch_max_tasks", "32");
    for (int i = 0; extra != NULL && extra[i] != NULL; i += 2)
        tu_ps_set(&ps, extra[i], extra[i + 1]);
    memset(w, 0, sizeof(*w));
    w->ctx = tu_init(ps.kv);
    atomic_store(&gate_open, 0);
    atomic_store(&looked_ok, 0);
    atomic_store(&looked_bad, 0);
    convoy_access_t gm = CONVOY_RW, lm = CONVOY_READ;
    convoy_access_t pm[3] = {CONVOY_READ, CONVOY_READ, CONVOY_WRITE};
    ck_assert_int_eq(convoy_class_new(w->ctx, "gate", 1, &gm, 0, &w->gate), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->gate, CONVOY_DEVICE_CPU, gate_chore), 0);
    ck_assert_int_eq(
        convoy_class_new(w->ctx, "produce", 3, pm, CONVOY_CLASS_BATCHABLE, &w->produce),
        CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->produce, CONVOY_DEVICE_SIM, produce_chore), 0);
    ck_assert_int_eq(convoy_class_new(w->ctx, "look", 1, &lm, 0, &w->look), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(w->look, CONVOY_DEVICE_CPU, look_chore), 0);
    w->g = convoy_host_alloc(w->ctx, 64);
    ck_assert_ptr_nonnull(w->g);
    ck_assert_int_eq(convoy_data_new(w->ctx, w->g, 64, &w->dg), CONVOY_SUCCESS);
    for (int t = 0; t < N; t++) {
        w->in[t] = convoy_host_alloc(w->ctx, BYTES);
        w->out[t] = convoy_host_alloc(w->ctx, BYTES);
        ck_assert(w->in[t] != NULL && w->out[t] != NULL);
        for (size_t i = 0; i < BYTES / 4; i++) {
            w->in[t][i] = (uint32_t)(t + i);
            w->out[t][i] = OLD;
        }
        ck_assert_int_eq(convoy_data_new(w->ctx, w->in[t], BYTES, &w->din[t]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_data_new(w->ctx, w->out[t], BYTES, &w->dout[t]), CONVOY_SUCCESS);
    }
}

static void world_close(world_t *w)
{
    for (int t = 0; t < N; t++) {
        convoy_data_free(w->din[t]);
        convoy_data_free(w->dout[t]);
        convoy_host_free(w->ctx, w->in[t]);
        convoy_host_free(w->ctx, w->out[t]);
    }
    convoy_data_free(w->dg);
    convoy_host_free(w->ctx, w->g);
    convoy_fini(w->ctx);
}

/* The gate, then N producers behind it (producer t fails when fail[t]), each followed by
 * a CPU successor that reads its output when successors is set. */
static void insert_all(world_t *w, const int *fail, int successors)
{
    ck_assert_int_eq(convoy_task_insert(w->ctx, w->gate, NULL, 0, &w->dg), CONVOY_SUCCESS);
    for (int t = 0; t < N; t++) {
        produce_args_t pa = {.fail = fail != NULL && fail[t]};
        convoy_data_t *f[3] = {w->din[t], w->dg, w->dout[t]};
        ck_assert_int_eq(convoy_task_insert(w->ctx, w->produce, &pa, sizeof(pa), f),
                         CONVOY_SUCCESS);
        look_args_t la = {.t = t};
        if (successors)
            ck_assert_int_eq(convoy_task_insert(w->ctx, w->look, &la, sizeof(la), &w->dout[t]),
                             CONVOY_SUCCESS);
    }
}

/* Wait (10 s at most, times the build's slowdown) until all N successors have run, with
 * no convoy_wait pending (it would send outputs home anyway); each found its output. */
static void await_looks(void)
{
    double limit = 10.0 * tu_slowdown();
    struct timespec ms = {0, 1000000};
    for (double s = 0; s < limit && atomic_load(&looked_ok) + atomic_load(&looked_bad) < N;
         s += 1e-3)
        nanosleep(&ms, NULL);
    ck_assert_int_eq(atomic_load(&looked_ok), N);
    ck_assert_int_eq(atomic_load(&looked_bad), 0);
}

/* Read the stats into *s until *field reaches at least n (10 s at most, times the build's
 * slowdown), with no convoy_wait pending; field points into *s. */
static void await_stat(const world_t *w, convoy_stats_t *s, const uint64_t *field, uint64_t n)
{
    double limit = 10.0 * tu_slowdown();
    struct timespec ms = {0, 1000000};
    convoy_get_stats(w->ctx, s);
    for (double t = 0; t < limit && *field < n; t += 1e-3) {
        nanosleep(&ms, NULL);
        convoy_get_stats(w->ctx, s);
    }
}

/* Wait until n tasks have completed; asserts they have. */
static void await_completed(const world_t *w, uint64_t n)
{
    convoy_stats_t s = {0}; /* await_stat fills it; gcc cannot tell */
    await_stat(w, &s, &s.tasks_completed, n);
    ck_assert_uint_eq(s.tasks_completed, n);
}

/* The gate and N producers with no successors, run to completion with no wait pending
 * (nothing goes home behind a launch). */
static void run_without_successors(world_t *w)
{
    insert_all(w, NULL, 0);
    atomic_store(&gate_open, 1);
    await_completed(w, N + 1);
}

static uint64_t internal_tasks(const world_t *w)
{
    return atomic_load(&w->ctx->next_internal_id);
}

/* Output t holds input t + 1 (ok), or what it held before its task (not ok). */
static void check_out(const world_t *w, int t, int ok)
{
    for (size_t i = 0; i < BYTES / 4; i++)
        REQUIRE(w->out[t][i] == (ok ? (uint32_t)(t + i) + 1 : (uint32_t)OLD),
                "output %d word %zu: %#x", t, i, w->out[t][i]);
}

/* Every output holds its input + 1; then the world is closed. */
static void close_all_home(world_t *w)
{
    for (int t = 0; t < N; t++)
        check_out(w, t, 1);
    world_close(w);
}

START_TEST(cpu_readers_need_no_flush)
{
    /* Proves: with an inline launch (_i = 1), a producer's output that a CPU successor
     * reads goes home behind the launch, once, and the successors run without a flush
     * task; without it (_i = 0), each successor waits for a flush task. Either way the
     * successors read the new version. */
    world_t w;
    world_open(&w, _i, NULL);
    insert_all(&w, NULL, 1);
    uint64_t before = internal_tasks(&w);
    atomic_store(&gate_open, 1);
    await_looks();
    uint64_t flushes = internal_tasks(&w) - before;
    if (_i)
        ck_assert_uint_eq(flushes, 0);
    else
        ck_assert_uint_ge(flushes, N);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_eq(s.d2h_copies, N); /* each output once */
    close_all_home(&w);
}
END_TEST

static void *open_gate_later(void *arg)
{
    (void)arg;
    struct timespec ms20 = {0, 20000000};
    nanosleep(&ms20, NULL);
    atomic_store(&gate_open, 1);
    return NULL;
}

START_TEST(pending_wait_takes_outputs_home)
{
    /* Proves: outputs launched while a convoy_wait is pending go home behind their launch
     * (no successor asks for them), once each, and the wait returns with them home. */
    world_t w;
    world_open(&w, 1, NULL);
    insert_all(&w, NULL, 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, open_gate_later, NULL), 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    pthread_join(th, NULL);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_eq(s.d2h_copies, N);
    ck_assert_uint_eq(s.tasks_failed, 0);
    close_all_home(&w);
}
END_TEST

START_TEST(failed_chore_output_stays_away)
{
    /* Proves: a producer whose chore fails sends nothing home: its output keeps the
     * version it had at home (nothing lost), its successor is cancelled, and the others
     * go home behind their launch as usual. */
    world_t w;
    world_open(&w, 1, NULL);
    int fail[N] = {0};
    for (int t = 3; t < N; t += 7)
        fail[t] = 1;
    insert_all(&w, fail, 1);
    uint64_t before = internal_tasks(&w);
    atomic_store(&gate_open, 1);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(w.ctx, "returned 7");
    int nfail = 0;
    for (int t = 0; t < N; t++) {
        check_out(&w, t, !fail[t]);
        nfail += fail[t];
    }
    ck_assert_int_eq(atomic_load(&looked_ok), N - nfail);
    ck_assert_int_eq(atomic_load(&looked_bad), 0);
    /* The wait's flush-all is convoy's only task: no successor needed a flush. */
    ck_assert_uint_le(internal_tasks(&w) - before, 1);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_eq(s.tasks_failed, (uint64_t)nfail);
    ck_assert_uint_eq(s.tasks_cancelled, (uint64_t)nfail);
    world_close(&w);
}
END_TEST

static convoy__sim_counters_t sim_counters(const world_t *w)
{
    convoy__sim_counters_t c;
    convoy__sim_get_counters(convoy__ctx_accel(w->ctx, 0), &c);
    return c;
}

START_TEST(failed_input_sends_nothing)
{
    /* Proves: when a producer's input failed to arrive (the ring's first stage-in fails
     * as it runs), nothing it wrote reaches home: its output keeps its version at home,
     * and the task fails naming the device's error. Where errors are not sticky (_i = 0)
     * the push behind sees the failure and sends nothing. Where they are (_i = 1, as a
     * GPU's), the stage-in's events are quiet and the push behind does not ask them: the
     * outputs are pushed behind the launch, and those copies never run, as on a GPU whose
     * context the fault ended. */
    world_t w;
    /* Four stage-in submissions: the first fails, the group's last one does not. */
    world_open(&w, 1,
               (const char *const[]){"sim_fail_async", "1", "batch_max_copies", "16",
                                     "sim_sticky_errors", _i ? "1" : "0", NULL});
    insert_all(&w, NULL, 1);
    atomic_store(&gate_open, 1);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(w.ctx, "reported an error");
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_gt(s.tasks_failed, 0);
    int failed = 0;
    for (int t = 0; t < N; t++) {
        int ok = w.out[t][0] != (uint32_t)OLD;
        check_out(&w, t, ok);
        failed += !ok;
    }
    ck_assert_uint_eq((uint64_t)failed, s.tasks_failed);
    ck_assert_int_eq(atomic_load(&looked_bad), 0);
    if (_i) {
        convoy__sim_counters_t c = sim_counters(&w);
        ck_assert_uint_ge(c.quiet_records, 4); /* the stage-in's, the launch's */
        ck_assert_uint_gt(s.d2h_copies, 0);    /* pushed behind, never run */
        ck_assert_uint_eq(s.tasks_failed, N);
    }
    world_close(&w);
}
END_TEST

START_TEST(failed_pushout_behind_loses_nothing)
{
    /* Proves: a pushout behind a launch that fails when it runs (_i = 0), or cannot be
     * submitted, not even one copy at a time (_i = 1), fails no task: the version stays
     * on the device, each CPU successor gets it through a flush, and the wait returns
     * with every output home. */
    world_t w;
    world_open(&w, 1,
               _i == 0 ? (const char *const[]){"sim_fail_async_home", "1", NULL}
                       /* the ring's stage-in is submission 1, its pushout behind 2, whose
                        * N copies are then retried alone: 3 .. N + 2. One ring of all N:
                        * it closes only when full. */
                       : (const char *const[]){"sim_fail_submission", "2", "sim_fail_submissions",
                                               "33", "batch_idle_close", "0", "batch_max_wait_us",
                                               "1e7", NULL});
    insert_all(&w, NULL, 1);
    uint64_t before = internal_tasks(&w);
    atomic_store(&gate_open, 1);
    await_looks();
    ck_assert_uint_ge(internal_tasks(&w) - before, 1); /* flushes pushed them again */
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_eq(s.tasks_failed, 0);
    if (_i == 1)
        ck_assert_uint_eq(s.retried_copies, N);
    close_all_home(&w);
}
END_TEST

START_TEST(pushed_behind_leave_write_behind_window)
{
    /* Proves: the pushouts behind launches count in write_behind's window only while
     * they fly. After a ring's outputs (4x the window) went home behind its launch, the
     * next ring's leaves, outputs nothing reads yet, still go home written behind. */
    world_t w;
    world_open(&w, 1, (const char *const[]){"write_behind", "64K", NULL});
    insert_all(&w, NULL, 1);
    atomic_store(&gate_open, 1);
    await_looks();
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    uint64_t before = s.write_behind_copies;
    insert_all(&w, NULL, 0);
    /* Completed with no wait pending: a wait would take the outputs home itself. The
     * write-behind is submitted in the progress thread's pass after the completions (a
     * ring started meanwhile can come between), so it is waited for, not read at once. */
    await_completed(&w, 2 * (N + 1) + N);
    await_stat(&w, &s, &s.write_behind_copies, before + 1);
    ck_assert_uint_gt(s.write_behind_copies, before);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    close_all_home(&w);
}
END_TEST

START_TEST(launch_event_polled_through_pushouts)
{
    /* Proves: on a device whose errors are sticky (_i = 1, as a GPU's), a launch with
     * pushouts behind it records its event quiet and the pipeline never asks that event
     * itself: it learns the launch is over from the last pushout's event, and every
     * successor reads the new version. Where errors are not sticky (_i = 0) no event is
     * quiet. */
    world_t w;
    world_open(&w, 1, (const char *const[]){"sim_sticky_errors", _i ? "1" : "0", NULL});
    insert_all(&w, NULL, 1);
    atomic_store(&gate_open, 1);
    await_looks();
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy__sim_counters_t c = sim_counters(&w);
    if (_i)
        ck_assert_uint_ge(c.quiet_records, 2); /* a ring's stage-in and launch */
    else
        ck_assert_uint_eq(c.quiet_records, 0);
    ck_assert_uint_eq(c.quiet_queries, 0);
    close_all_home(&w);
}
END_TEST

START_TEST(quiet_launch_event_asked_when_pushout_fails)
{
    /* Proves: when the pushout behind a launch whose event is quiet fails as it runs, on a
     * device whose errors are sticky, the launch's event is asked itself: the device's
     * error fails the members, no output holds anything but its old or its new version,
     * no successor reads a wrong one, and nothing hangs. */
    world_t w;
    world_open(&w, 1,
               (const char *const[]){"sim_sticky_errors", "1", "sim_fail_async_home", "1", NULL});
    insert_all(&w, NULL, 1);
    atomic_store(&gate_open, 1);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(w.ctx, "reported an error");
    convoy__sim_counters_t c = sim_counters(&w);
    ck_assert_uint_ge(c.quiet_records, 1);
    ck_assert_uint_ge(c.quiet_queries, 1);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_gt(s.tasks_failed, 0);
    for (int t = 0; t < N; t++)
        check_out(&w, t, w.out[t][0] != (uint32_t)OLD);
    ck_assert_int_eq(atomic_load(&looked_bad), 0);
    world_close(&w);
}
END_TEST

START_TEST(quiet_launch_event_without_pushout_event)
{
    /* Proves: when the pushouts behind a launch whose event is quiet leave no event of
     * their own (each of the 21 records tried for them fails, and a stream wait proves
     * them over), an event recorded as usual after them stands in: the launch's quiet
     * event is still never asked itself, and nothing fails. One ring of all N: its
     * stage-in's event is record 1, the launch's record 2 (both quiet), the pushout's
     * records 3-23. */
    world_t w;
    world_open(&w, 1,
               (const char *const[]){"sim_sticky_errors", "1", "sim_fail_record", "3",
                                     "sim_fail_records", "21", "batch_idle_close", "0",
                                     "batch_max_wait_us", "1e7", NULL});
    insert_all(&w, NULL, 1);
    atomic_store(&gate_open, 1);
    await_looks();
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy__sim_counters_t c = sim_counters(&w);
    ck_assert_uint_eq(c.quiet_records, 2);
    ck_assert_uint_eq(c.quiet_queries, 0);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_eq(s.tasks_failed, 0);
    close_all_home(&w);
}
END_TEST

START_TEST(quiet_stage_in_proven_by_launch)
{
    /* Proves: with nothing to push behind its launch (no successor, no wait pending), a
     * ring's stage-in is still recorded quiet on a device whose errors are sticky, and
     * proven by the launch's event, with no event of its own: one ring of all N records
     * two events (its one stage-in submission's, quiet, and the launch's), no quiet event
     * is asked, nothing fails. */
    world_t w;
    world_open(&w, 1,
               (const char *const[]){"sim_sticky_errors", "1", "batch_idle_close", "0",
                                     "batch_max_wait_us", "1e7", NULL});
    run_without_successors(&w);
    convoy__sim_counters_t c = sim_counters(&w);
    ck_assert_uint_eq(c.records, 2);
    ck_assert_uint_eq(c.quiet_records, 1);
    ck_assert_uint_eq(c.quiet_queries, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    close_all_home(&w);
}
END_TEST

/* The world of the split tests: producers' 8 KiB inputs travel alone (split), the
 * gate's 64 bytes in the ring's one small submission; sticky errors; extra presets. */
static void world_open_split(world_t *w, const char *const *extra)
{
    const char *kv[16] = {"sim_sticky_errors", "1", "batch_split_bytes", "4096"};
    int n = 4;
    for (int i = 0; extra != NULL && extra[i] != NULL && n < 14; i++)
        kv[n++] = extra[i];
    kv[n] = NULL;
    world_open(w, 1, kv);
}

START_TEST(quiet_stage_in_with_split_groups)
{
    /* Proves: a ring whose members each need a split (large) copy, launched from the host
     * once it lands, has its small stage-in (the gate's) recorded quiet and proven by an
     * event as usual behind it, not by another group's launch: every member runs, and no
     * quiet event is asked itself. No successors, no wait: no launch event is quiet. */
    world_t w;
    world_open_split(&w, NULL);
    run_without_successors(&w);
    convoy__sim_counters_t c = sim_counters(&w);
    ck_assert_uint_ge(c.quiet_records, 1);
    ck_assert_uint_eq(c.quiet_queries, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_gt(s.split_copies, 0);
    ck_assert_uint_eq(s.tasks_failed, 0);
    close_all_home(&w);
}
END_TEST

START_TEST(quiet_stage_in_asked_without_stand_in)
{
    /* Proves: when no event can be recorded behind a ring's quiet stage-in (every record
     * after the first fails: the split copies and the launches are proven over by syncs
     * of their streams), it is asked itself: the split groups launch once it has landed, nothing
     * hangs or fails, and every output comes home. */
    world_t w;
    world_open_split(&w, (const char *const[]){"sim_fail_record", "2", "sim_fail_records",
                                               "1000000000", "batch_idle_close", "0",
                                               "batch_max_wait_us", "1e7", NULL});
    run_without_successors(&w);
    convoy__sim_counters_t c = sim_counters(&w);
    ck_assert_uint_eq(c.quiet_records, 1);
    ck_assert_uint_ge(c.quiet_queries, 1);
    convoy_stats_t s;
    convoy_get_stats(w.ctx, &s);
    ck_assert_uint_eq(s.tasks_failed, 0);
    ck_assert_int_eq(convoy_wait(w.ctx), CONVOY_SUCCESS);
    close_all_home(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("push_behind");
    TCase *tc = tu_tcase(s, "push_behind", 30);
    tcase_add_loop_test(tc, cpu_readers_need_no_flush, 0, 2);
    tcase_add_test(tc, pending_wait_takes_outputs_home);
    tcase_add_test(tc, failed_chore_output_stays_away);
    tcase_add_loop_test(tc, failed_input_sends_nothing, 0, 2);
    tcase_add_loop_test(tc, failed_pushout_behind_loses_nothing, 0, 2);
    tcase_add_test(tc, pushed_behind_leave_write_behind_window);
    tcase_add_loop_test(tc, launch_event_polled_through_pushouts, 0, 2);
    tcase_add_test(tc, quiet_launch_event_asked_when_pushout_fails);
    tcase_add_test(tc, quiet_launch_event_without_pushout_event);
    tcase_add_test(tc, quiet_stage_in_proven_by_launch);
    tcase_add_test(tc, quiet_stage_in_with_split_groups);
    tcase_add_test(tc, quiet_stage_in_asked_without_stand_in);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

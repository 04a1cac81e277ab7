/*
 * check_pipeline_faults: every fault-injection path of the sim device through the
 * accelerator pipeline, one at a time, under both schedulers (DESIGN.md, "memcpy_multi:
 * the contract"): a failed copy submission retried copy by copy, a failed allocation, a
 * failed launch, a datum larger than the device, an event that cannot be recorded (once,
 * and for good), a failed synchronisation, a fresh buffer's fill that fails as it runs,
 * and a device whose context a fault ended. Each checks the world's oracle
 * (tests/pipeline_world.h): nothing lost, and exactly the tasks that must fail fail,
 * with messages that name the device.
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
#include "tests/pipeline_world.h"
#include "tests/test_util.h"

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

static void tiny_world(world_t *w, tu_pset_t *ps, int n)
{
    static size_t sizes[4 * TINY_N];
    for (int i = 0; i < 4 * n; i++)
        sizes[i] = 8 * KiB;
    world_init(w, ps, 4 * n, sizes, 11);
}

/* The sim under loop index i's scheduler with the fault knobs kv (name, value, ...,
 * NULL), a tiny world of ndata tasks' data, and its first ntasks tasks inserted. */
static void tiny_faults(world_t *w, int i, int ndata, int ntasks, const char *const *kv)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, g_scheds[i]);
    for (int k = 0; kv[k] != NULL; k += 2)
        tu_ps_set(&ps, kv[k], kv[k + 1]);
    tiny_world(w, &ps, ndata);
    tiny_tasks(w, ntasks);
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
    tu_pset_t ps;
    tu_ps_sim(&ps, sched);
    tu_ps_setf(&ps, "batch_max_tasks", "%d", TINY_N);
    tu_ps_set(&ps, "batch_max_wait_us", "1e7");
    tu_ps_set(&ps, "batch_idle_close", "0");
    tu_ps_set(&ps, "batch_max_copies", "32");
    tu_ps_set(&ps, "sim_fail_submission", _i == 1 ? "2" : "5");
    tu_ps_set(&ps, "sim_fail_submitted", "8");
    static world_t w;
    tiny_world(&w, &ps, TINY_N);
    tiny_tasks(&w, TINY_N);
    verdict_t v = world_wait(&w, 0);
    convoy_stats_t s = world_stats(&w);
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

/* The first of two sim tasks (the second reads its output) fails under the sim's fault
 * key=val, with a message naming the task, its class, `what` failed and the fault; the
 * chore never ran, the second task and both observers are cancelled (convoy_wait counts
 * 1 failed, 3 cancelled), the output keeps its value, and the two inserted again
 * succeed. */
static void first_of_two_fails(const char *sched, const char *key, const char *val,
                               const char *what)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, sched);
    tu_ps_set(&ps, key, val);
    static world_t w;
    tiny_world(&w, &ps, 2);
    const int data[] = {0, 1, 2, 3}, next[] = {3, 4, 5, 6};
    world_task(&w, S_SIM_TINY, 0, data, 1);
    world_task(&w, S_SIM_TINY, 0, next, 2); /* reads the failed task's output */
    verdict_t v = world_wait(&w, 0);
    ck_assert_int_eq(v.failed, 1);
    ck_assert_int_eq(v.cancelled, 1);
    ck_assert_int_eq(atomic_load(&g_ran[0]), 0);
    ck_assert_msg(strstr(v.msg, "task 0 (class 'sim_tiny') failed: ") && strstr(v.msg, what) &&
                      strstr(v.msg, key) && strstr(v.msg, "1 task(s) failed and 3 were cancelled"),
                  "message: %s", v.msg);
    world_task(&w, S_SIM_TINY, 0, data, 3);
    world_task(&w, S_SIM_TINY, 0, next, 4);
    v = world_wait(&w, 1);
    ck_assert_int_eq(v.ok, 2);
    world_fini(&w);
}

/* An allocation that fails (sim_fail_alloc, CONVOY_ERR_DEVICE): a device memory message;
 * the memory the task had taken is given back (world_fini). */
START_TEST(test_fail_alloc)
{
    first_of_two_fails(g_scheds[_i], "sim_fail_alloc", "2", "device memory");
}
END_TEST

/* A launch that fails (sim_fail_launch): a launch message, the chore never run. */
START_TEST(test_fail_launch)
{
    first_of_two_fails(g_scheds[_i], "sim_fail_launch", "1", "failed: launch on sim0 failed");
}
END_TEST

/* A datum larger than the device's memory fails its sim task with a message naming the
 * datum's size and the device's; nothing is allocated for it and other tasks go on. */
START_TEST(test_datum_larger_than_device)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, g_scheds[_i]);
    tu_ps_set(&ps, "sim_memory", "64K");
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
    tu_pset_t ps;
    tu_ps_sim(&ps, sched);
    tu_ps_set(&ps, "sim_fail_record", "5");
    tu_ps_set(&ps, "sim_fail_records", "3");
    random_graph_all_succeed(&ps, seed + 400, tu_scaled(100, 30));
}
END_TEST

/* Every datum holds the program's reference only: a device copy takes none unless it
 * outlives its datum's drop (device/devmem.c, data_ref). */
static void refs_are_the_programs(const world_t *w)
{
    for (int i = 0; i < w->ndata; i++)
        ck_assert_msg(atomic_load(&w->d[i]->refs) == 1, "datum %d holds %d references", i,
                      atomic_load(&w->d[i]->refs));
}

/* Under the faults kv, 4 tasks on 4 data all succeed; no datum holds more than the
 * program's reference, and freeing them all gives the device its memory back
 * (world_fini). */
static void all_succeed(int i, const char *const *kv)
{
    static world_t w;
    tiny_faults(&w, i, 4, 4, kv);
    verdict_t v = world_wait(&w, 1);
    ck_assert_int_eq(v.wait, CONVOY_SUCCESS);
    ck_assert_int_eq(v.ok, 4);
    refs_are_the_programs(&w);
    world_fini(&w);
}

/* A device that never records an event again (from the 3rd record on; issue 9, case 2):
 * nothing is abandoned in flight: the pipeline waits for the stream instead, so every
 * copy and launch is proven over, every task succeeds with its outputs whole, nothing
 * hangs and no device memory is kept out of use. */
START_TEST(test_fail_record_forever)
{
    all_succeed(
        _i, (const char *const[]){"sim_fail_record", "3", "sim_fail_records", "2000000000", NULL});
}
END_TEST

/* As above, and waiting for the stream fails too (sim_fail_sync): the device is broken.
 * The tasks whose copies cannot be proven over fail with a message naming the device,
 * convoy_wait reports them, every host buffer keeps the value of the tasks that
 * succeeded, and the device memory those copies touch is never reused. When the
 * submission that cannot be proven over is a pushout home, its copy was only read: it
 * keeps its version, a later flush pushes it again, and no task fails (before, the
 * newest version was lost with it). The copies kept out of use outlive their data's
 * frees and drops: each keeps its handle until convoy_fini frees it (AddressSanitizer
 * sees a read of a handle freed before). */
START_TEST(test_fail_sync)
{
    static world_t w;
    tiny_faults(&w, _i, 4, 4,
                (const char *const[]){"sim_fail_record", "3", "sim_fail_records", "2000000000",
                                      "sim_fail_sync", "1", NULL});
    verdict_t v = world_wait(&w, 0);
    ck_assert_msg(v.wait == CONVOY_ERR_TASK_FAILED || v.wait == CONVOY_SUCCESS, "wait: %d %s",
                  (int)v.wait, v.msg);
    if (v.wait != CONVOY_SUCCESS) {
        ck_assert_uint_gt(world_stats(&w).tasks_failed,
                          0); /* a task, or an observer of its output */
        ck_assert_msg(strstr(v.msg, "sim0") != NULL, "message: %s", v.msg);
    }
    refs_are_the_programs(&w);
    w.pinned_ok = 1; /* device copies whose transfers were never proven over stay out of use */
    world_fini(&w);
}
END_TEST

/* Drop rings that find no host memory for their state (fault_drop_rings): the frees'
 * drops still free the device copies, whose data go with the drops (a copy holds no
 * reference: AddressSanitizer sees a later read of one), and the device memory comes
 * back (before, the copies stayed until convoy_fini). */
START_TEST(test_drop_ring_without_memory)
{
    all_succeed(_i, (const char *const[]){"fault_drop_rings", "1000", NULL});
}
END_TEST

/* x = 1 (flow: x, written) */
static int set_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    ((uint32_t *)t->flows[0])[0] = 1;
    return 0;
}

/* x += 5 (flow: x, read and written) */
static int add_chore(const convoy_task_view_t *t, void *s)
{
    (void)s;
    ((uint32_t *)t->flows[0])[0] += 5;
    return 0;
}

/* A copy on the device into a task's fresh buffer that fails as it runs fails the task
 * (sim_fail_async, errors not sticky: only the next event of the stage-in's stream says
 * so): x, set to 1 on the device by one task, then read and written there by the next
 * (its only newest version is the device's, so the next task writes a fresh buffer
 * filled from it), keeps 1, and convoy_wait reports the failure. Before, the group's
 * stage-in event was never polled, the failure never seen, and x came home as whatever
 * the unfilled buffer held plus 5. */
START_TEST(test_fail_async_fresh_fill)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, g_scheds[_i]);
    tu_ps_set(&ps, "sim_fail_async", "1");
    convoy_context_t *ctx = tu_init(ps.kv);
    convoy_access_t wm = CONVOY_WRITE, rw = CONVOY_RW;
    convoy_class_t *set, *add;
    ck_assert_int_eq(convoy_class_new(ctx, "set", 1, &wm, CONVOY_CLASS_BATCHABLE, &set),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(set, CONVOY_DEVICE_SIM, set_chore), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &add),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(add, CONVOY_DEVICE_SIM, add_chore), 0);
    uint32_t *x = convoy_host_alloc(ctx, 4096);
    ck_assert_ptr_nonnull(x);
    x[0] = 0;
    convoy_data_t *dx;
    ck_assert_int_eq(convoy_data_new(ctx, x, 4096, &dx), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, set, NULL, 0, &dx), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, add, NULL, 0, &dx), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(ctx, "sim0");
    tu_assert_error_has(ctx, "when it ran"); /* what the device said, not only that it did */
    ck_assert_uint_eq(x[0], 1);
    convoy_stats_t st;
    convoy_get_stats(ctx, &st);
    ck_assert_uint_eq(st.tasks_failed, 1);
    ck_assert_uint_eq(st.d2d_copies, 1);
    convoy_data_free(dx);
    convoy_host_free(ctx, x);
    convoy_fini(ctx);
}
END_TEST

/* A device whose context a fault ended, as a GPU's (sim_sticky_errors=2: the first copy
 * submission fails as it runs, and every call after it fails too): nothing hangs, every
 * task fails or is cancelled with a message naming the device and the fault, every host
 * buffer keeps its value, and tasks inserted after the wait fail in turn. The device
 * memory of copies that could not be proven over stays out of use. */
START_TEST(test_device_lost)
{
    static world_t w;
    tiny_faults(&w, _i, 8, 4,
                (const char *const[]){"sim_fail_async", "1", "sim_sticky_errors", "2", NULL});
    verdict_t v = world_wait(&w, 0);
    ck_assert_int_eq(v.wait, CONVOY_ERR_TASK_FAILED);
    ck_assert_msg(strstr(v.msg, "sim0") != NULL && strstr(v.msg, "when it ran") != NULL,
                  "message: %s", v.msg);
    convoy_stats_t st = world_stats(&w);
    ck_assert_uint_eq(st.tasks_completed, 0);
    ck_assert_uint_ge(st.tasks_failed + st.tasks_cancelled, 4);
    /* The device is gone for good: later tasks fail too, and the wait says so. */
    for (int i = 4; i < 8; i++) {
        const int data[] = {4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3};
        world_task(&w, S_SIM_TINY, 0, data, (uint64_t)i);
    }
    v = world_wait(&w, 0);
    ck_assert_int_eq(v.wait, CONVOY_ERR_TASK_FAILED);
    ck_assert_msg(strstr(v.msg, "sim0") != NULL, "message: %s", v.msg);
    w.pinned_ok = 1;
    world_fini(&w);
}
END_TEST

/* A device lost in a random graph (sim_sticky_errors=2, the first pushout home failing
 * as it runs, chores run at their launch; graph 7, which a review found): the waits
 * return. Before, two flushes owed one copy's version home and pushed it again in turn
 * for ever, each taking from the other the copy's mark of who pushed it last (push_again
 * now pushes each copy a flush holds again once at most). The outputs written on the
 * device before the fault are lost with it, so the world's oracle (the replay of the
 * tasks that succeeded) is not asked here. */
START_TEST(test_device_lost_random)
{
    for (int round = 0; round < 6; round++) {
        tu_pset_t ps;
        ps_random(&ps, g_scheds[_i]);
        tu_ps_set(&ps, "sim_fail_async_home", "1");
        tu_ps_set(&ps, "sim_sticky_errors", "2");
        tu_ps_set(&ps, "sim_launch_inline", "1");
        tu_rng_t rng;
        tu_rng_seed(&rng, 7);
        size_t sizes[NDATA_RANDOM];
        random_sizes(&rng, sizes, NDATA_RANDOM);
        static world_t w;
        world_init(&w, &ps, NDATA_RANDOM, sizes, 7);
        for (int i = 0; i < 60; i++)
            world_random_task(&w, &rng, 0);
        convoy_status_t st = convoy_wait(w.ctx);
        ck_assert_msg(st == CONVOY_SUCCESS || st == CONVOY_ERR_TASK_FAILED, "wait: %s",
                      convoy_status_name(st));
        w.pinned_ok = 1;
        world_fini(&w);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pipeline faults");
    TCase *tc = tu_tcase(s, "faults", 30);
    tcase_add_loop_test(tc, test_fail_submission_retried, 0, 2);
    tcase_add_loop_test(tc, test_fail_alloc, 0, 2);
    tcase_add_loop_test(tc, test_fail_launch, 0, 2);
    tcase_add_loop_test(tc, test_datum_larger_than_device, 0, 2);
    tcase_add_loop_test(tc, test_fail_record_retried, 0, 2);
    tcase_add_loop_test(tc, test_fail_record_forever, 0, 2);
    tcase_add_loop_test(tc, test_fail_sync, 0, 2);
    tcase_add_loop_test(tc, test_drop_ring_without_memory, 0, 2);
    tcase_add_loop_test(tc, test_fail_async_fresh_fill, 0, 2);
    tcase_add_loop_test(tc, test_device_lost, 0, 2);
    tcase_add_loop_test(tc, test_device_lost_random, 0, 2);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

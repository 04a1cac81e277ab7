/*
 * check_robust_core: the runtime's waits and chores under misuse (issue 11): a wait
 * returns while another thread inserts on; a chore that waits gets CONVOY_ERR_STATE
 * instead of a deadlock, and may insert tasks; waits and acquires do not sit out
 * batch_max_wait_us; overlapping registrations are refused. Chore changes and
 * per-member failures are in check_robust_chore.c.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/test_util.h"

static const char *const on_cpu[] = {"devices", "host", "nthreads", "2", "bind", "0", NULL};
static const char *const on_sim[] = {"devices", "sim", "nthreads", "2", "bind", "0", NULL};

/* ---- 1. convoy_wait while another thread inserts ------------------------------------ */

typedef struct inserter {
    convoy_context_t *ctx;
    convoy_class_t *cls;
    convoy_data_t *d;
    atomic_int stop, running;
    atomic_long inserted, done;
} inserter_t;

static inserter_t g_in;

/* Adds 1 to its long, and returns only once the inserter has inserted the next task (or
 * stopped): the inserter always has a task in flight, never zero. */
static int chained_add(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    long k = *(const long *)t->args;
    (*(long *)t->flows[0])++;
    while (k >= 0 && atomic_load(&g_in.inserted) < k + 2 && atomic_load(&g_in.running))
        sched_yield();
    atomic_fetch_add(&g_in.done, 1);
    return 0;
}

/* Inserts until told to stop (or 10 s have passed), at most 32 tasks ahead. */
static void *insert_loop(void *p)
{
    inserter_t *in = p;
    double until = tu_now() + 10 * tu_slowdown();
    while (!atomic_load(&in->stop) && tu_now() < until) {
        long k = atomic_load(&in->inserted);
        if (k - atomic_load(&in->done) >= 32) {
            sched_yield();
            continue;
        }
        ck_assert_int_eq(convoy_task_insert(in->ctx, in->cls, &k, sizeof(k), &in->d),
                         CONVOY_SUCCESS);
        atomic_fetch_add(&in->inserted, 1);
    }
    atomic_store(&in->running, 0);
    return NULL;
}

static void wait_while_inserting(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "chained", 1, &rw, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, chained_add), CONVOY_SUCCESS);
    long theirs = 0, mine = 0, none = -1;
    g_in = (inserter_t){.ctx = ctx, .cls = cls};
    atomic_init(&g_in.running, 1);
    convoy_data_t *dm;
    ck_assert_int_eq(convoy_data_new(ctx, &theirs, sizeof(theirs), &g_in.d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_new(ctx, &mine, sizeof(mine), &dm), CONVOY_SUCCESS);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, insert_loop, &g_in), 0);
    while (atomic_load(&g_in.inserted) < 10)
        sched_yield();
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, cls, &none, sizeof(none), &dm), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    int still = atomic_load(&g_in.running);
    long got = mine; /* host memory is current for the tasks waited for */
    atomic_store(&g_in.stop, 1);
    pthread_join(th, NULL);
    ck_assert_msg(still, "convoy_wait returned only after the inserting thread stopped");
    ck_assert_int_eq(got, 10);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(theirs, atomic_load(&g_in.inserted));
}

START_TEST(wait_returns_while_another_thread_inserts)
{
    /* Proves convoy_wait waits for the tasks inserted before it, not for quiescence: it
     * returns while another thread keeps inserting, with a task of its in flight at every
     * moment (each chore returns only once the next task is in). */
    tu_with_presets(on_cpu, wait_while_inserting, NULL);
}
END_TEST

/* ---- 2. what a chore may call ------------------------------------------------------ */

static convoy_context_t *g_ctx;
static convoy_class_t *g_child_cls;
static convoy_data_t *g_other;
static convoy_data_t *g_made;
static long g_made_mem;
static int g_rc_wait, g_rc_acquire, g_rc_new;
static char g_msg_wait[1024], g_msg_acquire[1024];
static atomic_int g_children;

/* Calls what a chore may not: each must come back with CONVOY_ERR_STATE at once. */
static int misbehave(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    g_rc_wait = convoy_wait(g_ctx);
    snprintf(g_msg_wait, sizeof(g_msg_wait), "%s", convoy_last_error(g_ctx));
    g_rc_acquire = convoy_data_acquire(g_other, CONVOY_READ);
    snprintf(g_msg_acquire, sizeof(g_msg_acquire), "%s", convoy_last_error(g_ctx));
    convoy_data_free(g_other); /* refused: logs and leaves the handle alone */
    convoy_fini(g_ctx);        /* refused: logs and leaves the context alone */
    g_rc_new = convoy_data_new(g_ctx, &g_made_mem, sizeof(g_made_mem), &g_made); /* allowed */
    return 0;
}

static void chore_calls(convoy_context_t *ctx, void *arg)
{
    const char *role = arg;
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    g_ctx = ctx;
    ck_assert_int_eq(convoy_class_new(ctx, "misbehave", 1, &rw, 0, &cls), CONVOY_SUCCESS);
    convoy_device_kind_t kind = strstr(role, "CPU") ? CONVOY_DEVICE_CPU : CONVOY_DEVICE_SIM;
    ck_assert_int_eq(convoy_class_set_chore(cls, kind, misbehave), CONVOY_SUCCESS);
    long x = 0, y = 5;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &x, sizeof(x), &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_new(ctx, &y, sizeof(y), &g_other), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(g_rc_wait, CONVOY_ERR_STATE);
    ck_assert_int_eq(g_rc_acquire, CONVOY_ERR_STATE);
    ck_assert_msg(strstr(g_msg_wait, "convoy_wait called on") && strstr(g_msg_wait, role), "%s",
                  g_msg_wait);
    ck_assert_msg(strstr(g_msg_acquire, "convoy_data_acquire called on"), "%s", g_msg_acquire);
    ck_assert_int_eq(g_rc_new, CONVOY_SUCCESS);
    convoy_data_free(g_made);
    /* The refused free left the handle usable. */
    ck_assert_int_eq(convoy_data_acquire(g_other, CONVOY_RW), CONVOY_SUCCESS);
    ck_assert_int_eq(y, 5);
    convoy_data_free(g_other);
    convoy_data_free(d);
}

START_TEST(chore_waits_refused_cpu)
{
    /* Proves a CPU chore calling convoy_wait, convoy_data_acquire or convoy_data_free
     * gets CONVOY_ERR_STATE naming the call, and convoy_fini is refused leaving the
     * context usable (each deadlocked), and that convoy_data_new works there. */
    tu_with_presets(on_cpu, chore_calls, (void *)"a CPU worker");
}
END_TEST

START_TEST(chore_waits_refused_sim)
{
    /* Proves the same on sim, whose chores run on its stream threads. */
    tu_with_presets(on_sim, chore_calls, (void *)"a sim stream thread");
}
END_TEST

/* Inserts two children of itself while its depth (its argument) is below 4. */
static int spawn(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    int depth = *(const int *)t->args;
    atomic_fetch_add(&g_children, 1);
    if (depth < 4) {
        int next = depth + 1;
        convoy_data_t *d = g_other;
        for (int i = 0; i < 2; i++)
            if (convoy_task_insert(g_ctx, g_child_cls, &next, sizeof(next), &d) != CONVOY_SUCCESS)
                return 1;
    }
    return 0;
}

static void chore_inserts(convoy_context_t *ctx, void *arg)
{
    convoy_device_kind_t kind = *(convoy_device_kind_t *)arg;
    convoy_access_t r = CONVOY_READ;
    g_ctx = ctx;
    atomic_store(&g_children, 0);
    ck_assert_int_eq(convoy_class_new(ctx, "spawn", 1, &r, 0, &g_child_cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(g_child_cls, kind, spawn), CONVOY_SUCCESS);
    long x = 1;
    ck_assert_int_eq(convoy_data_new(ctx, &x, sizeof(x), &g_other), CONVOY_SUCCESS);
    int depth = 0;
    ck_assert_int_eq(convoy_task_insert(ctx, g_child_cls, &depth, sizeof(depth), &g_other),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    /* 1 + 2 + 4 + 8 + 16: the children inserted during the wait were waited for. */
    ck_assert_int_eq(atomic_load(&g_children), 31);
}

START_TEST(chore_may_insert_cpu)
{
    /* Proves a CPU chore may insert tasks, and that convoy_wait waits for them too. */
    convoy_device_kind_t k = CONVOY_DEVICE_CPU;
    tu_with_presets(on_cpu, chore_inserts, &k);
}
END_TEST

START_TEST(chore_may_insert_sim)
{
    /* Proves the same for a sim chore (on a sim stream thread). */
    convoy_device_kind_t k = CONVOY_DEVICE_SIM;
    tu_with_presets(on_sim, chore_inserts, &k);
}
END_TEST

/* ---- 3. a wait closes the rings it waits for ---------------------------------------- */

static int add_one(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    (*(long *)t->flows[0])++;
    return 0;
}

/* Three tasks of a batchable class adding 1 to v[0..3) on sim, inserted; d gets the data. */
static void insert_three(convoy_context_t *ctx, long v[3], convoy_data_t *d[3])
{
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &cls),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, add_one), CONVOY_SUCCESS);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(long), &d[i]), CONVOY_SUCCESS);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d[i]), CONVOY_SUCCESS);
}

static void long_batch_wait(convoy_context_t *ctx, void *arg)
{
    int use_acquire = *(int *)arg;
    long v[3] = {0, 0, 0};
    convoy_data_t *d[3];
    double t0 = tu_now();
    insert_three(ctx, v, d);
    if (use_acquire)
        ck_assert_int_eq(convoy_data_acquire(d[1], CONVOY_READ), CONVOY_SUCCESS);
    else
        ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    double took = tu_now() - t0;
    ck_assert_int_eq(v[1], 1);
    /* A functional bound: half the 10 s the ring would otherwise wait. */
    ck_assert_msg(took < 5.0, "the wait took %.1f s: it sat out batch_max_wait_us", took);
    /* Every datum home before v goes out of scope (fini would flush into it). */
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(v[0] + v[2], 2);
}

static const char *const sim_long_batch[] = {
    "devices", "sim", "sched", "batch", "batch_max_wait_us", "10000000", "batch_idle_close",
    "0",       "nthreads", "1", "bind", "0", NULL};

START_TEST(wait_closes_partial_ring)
{
    /* Proves convoy_wait makes a partial ring leave: with batch_max_wait_us 10 s and 3
     * tasks of a batchable class, it returns in well under 5 s. */
    int acquire = 0;
    tu_with_presets(sim_long_batch, long_batch_wait, &acquire);
}
END_TEST

START_TEST(acquire_closes_partial_ring)
{
    /* Proves the same for convoy_data_acquire on one of the ring's data. */
    int acquire = 1;
    tu_with_presets(sim_long_batch, long_batch_wait, &acquire);
}
END_TEST

/* ---- 4. an idle device does not hold a partial ring back (batch_idle_close) -------- */

static uint64_t completed(const convoy_context_t *ctx)
{
    convoy_stats_t st;
    convoy_get_stats(ctx, &st);
    return st.tasks_completed;
}

/* Three tasks of a batchable class for an idle device, with batch_max_wait_us 10 s and
 * rings of 256, and no wait or acquire until `within` s have passed or all completed: *arg
 * returns how many had. */
static void idle_ring(convoy_context_t *ctx, void *arg)
{
    double within = *(double *)arg;
    long v[3] = {0, 0, 0};
    convoy_data_t *d[3];
    insert_three(ctx, v, d);
    double t0 = tu_now();
    while (completed(ctx) < 3 && tu_now() - t0 < within)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    *(double *)arg = (double)completed(ctx);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(v[0] + v[1] + v[2], 3);
}

START_TEST(idle_device_takes_partial_ring)
{
    /* Proves that with batch_idle_close on (the default), tasks bound for a device with
     * nothing in flight leave at once: all 3 complete in well under the 10 s the ring
     * would otherwise wait for, before any wait expedites them. */
    static const char *const presets[] = {"devices", "sim", "sched", "batch",
                                          "batch_max_wait_us", "10000000", "nthreads", "1",
                                          "bind", "0", NULL};
    double arg = 5.0;
    tu_with_presets(presets, idle_ring, &arg);
    ck_assert_msg(arg == 3, "%.0f of 3 tasks completed in 5 s on an idle device", arg);
}
END_TEST

START_TEST(idle_close_off_holds_ring)
{
    /* The same with batch_idle_close 0: the ring waits to fill (none completes in 0.3 s)
     * until the wait makes it leave. */
    double arg = 0.3;
    tu_with_presets(sim_long_batch, idle_ring, &arg);
    ck_assert_msg(arg == 0, "%.0f of 3 tasks completed with batch_idle_close 0", arg);
}
END_TEST

/* ---- 5. overlapping registrations --------------------------------------------------- */

static void overlap(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    char mem[256];
    convoy_data_t *a, *b, *c;
    ck_assert_int_eq(convoy_data_new(ctx, mem + 64, 64, &a), CONVOY_SUCCESS);
    convoy_data_t *keep = (convoy_data_t *)0x1;
    ck_assert_int_eq(convoy_data_new(ctx, mem + 64, 64, &keep), CONVOY_ERR_INVALID);
    ck_assert_ptr_eq(keep, (convoy_data_t *)0x1); /* set only on success */
    char want[64];
    snprintf(want, sizeof(want), "[%p, %p)", (void *)(mem + 64), (void *)(mem + 128));
    tu_assert_error_has(ctx, "overlaps datum 0", want, "64 bytes");
    /* Partial overlaps at either end, and a range holding the datum. */
    ck_assert_int_eq(convoy_data_new(ctx, mem + 100, 100, &b), CONVOY_ERR_INVALID);
    snprintf(want, sizeof(want), "[%p, %p)", (void *)(mem + 100), (void *)(mem + 200));
    tu_assert_error_has(ctx, want, "overlaps datum 0");
    ck_assert_int_eq(convoy_data_new(ctx, mem + 10, 55, &b), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_data_new(ctx, mem, 256, &b), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_data_new(ctx, mem + 127, 1, &b), CONVOY_ERR_INVALID);
    /* Adjacent ranges are fine, on both sides. */
    ck_assert_int_eq(convoy_data_new(ctx, mem, 64, &b), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_new(ctx, mem + 128, 128, &c), CONVOY_SUCCESS);
    /* Between two data, overlapping the second: named is the one it overlaps. */
    convoy_data_t *e;
    ck_assert_int_eq(convoy_data_new(ctx, mem + 200, 8, &e), CONVOY_ERR_INVALID);
    tu_assert_error_has(ctx, "overlaps datum 2");
    /* Freed memory may be registered again. */
    convoy_data_free(a);
    ck_assert_int_eq(convoy_data_new(ctx, mem + 64, 64, &a), CONVOY_SUCCESS);
    /* A range that wraps around the address space. */
    ck_assert_int_eq(convoy_data_new(ctx, (void *)(~(uintptr_t)0 - 8), 64, &e), CONVOY_ERR_INVALID);
    tu_assert_error_has(ctx, "past the end of the address space");
    convoy_data_free(a);
    convoy_data_free(b);
    convoy_data_free(c);
}

START_TEST(overlapping_registration)
{
    /* Proves convoy_data_new refuses host memory overlapping a live datum (the same
     * memory, partial overlaps) naming both ranges and the datum, and accepts adjacent
     * ranges and memory freed before. */
    tu_with_presets(on_cpu, overlap, NULL);
}
END_TEST

/* ---- 6. handles freed already ------------------------------------------------------ */

static int bump(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    (*(int *)t->flows[0])++;
    return 0;
}

static void freed_twice(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    static int x[4];
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "bump", 1, &rw, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_CPU, bump), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, bump), CONVOY_SUCCESS);
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, x, sizeof(x), &d), CONVOY_SUCCESS);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d), CONVOY_SUCCESS);
    convoy_data_free(d); /* waits for its three tasks */
    ck_assert_int_eq(x[0], 3);
    convoy_data_free(d); /* refused, logged: the handle's memory is gone */
    ck_assert_int_eq(convoy_data_acquire(d, CONVOY_READ), CONVOY_ERR_INVALID);
    char want[64];
    snprintf(want, sizeof(want), "%p is not a live data handle", (void *)d);
    tu_assert_error_has(NULL, "convoy_data_acquire", want);
    ck_assert_int_eq(convoy_data_set_flags(d, 0), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "convoy_data_set_flags", want);
    /* Its memory may be registered again, and the new handle works; the stale pointer is
     * still refused (the new handle is not at its address), and leaves the new one be. */
    convoy_data_t *stale = d;
    ck_assert_int_eq(convoy_data_new(ctx, x, sizeof(x), &d), CONVOY_SUCCESS);
    ck_assert_ptr_ne(d, stale);
    convoy_data_free(stale);
    ck_assert_int_eq(convoy_data_acquire(stale, CONVOY_READ), CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_acquire(d, CONVOY_READ), CONVOY_SUCCESS);
    ck_assert_int_eq(x[0], 4);
    /* A handle convoy_fini freed (of another context) is refused too. */
    convoy_context_t *other;
    ck_assert_int_eq(convoy_init(NULL, NULL, &other), CONVOY_SUCCESS);
    static int y[4];
    convoy_data_t *e;
    ck_assert_int_eq(convoy_data_new(other, y, sizeof(y), &e), CONVOY_SUCCESS);
    convoy_fini(other);
    convoy_data_free(e);
    ck_assert_int_eq(convoy_data_acquire(e, CONVOY_RW), CONVOY_ERR_INVALID);
    tu_assert_error_has(NULL, "not a live data handle");
}

START_TEST(freed_handle_refused_cpu)
{
    /* Proves a handle freed already (by convoy_data_free, twice, or by convoy_fini) is
     * refused by convoy_data_free (logged), convoy_data_acquire and convoy_data_set_flags
     * (CONVOY_ERR_INVALID naming the pointer) without reading freed memory (ASan would
     * report it), and that its memory may be registered again. */
    tu_with_presets(on_cpu, freed_twice, NULL);
}
END_TEST

START_TEST(freed_handle_refused_sim)
{
    /* Proves the same with the tasks on the sim device (the free drops device copies). */
    static const char *const on_sim[] = {"devices", "sim", "nthreads", "1", "bind", "0", NULL};
    tu_with_presets(on_sim, freed_twice, NULL);
}
END_TEST

/* ---- convoy_last_error(ctx) while another thread's calls fail ------------------------ */

static atomic_int g_err_stop;

static void *fail_calls(void *p)
{
    convoy_context_t *ctx = p;
    char buf[64];
    for (int i = 0; !atomic_load(&g_err_stop); i++) {
        char name[32];
        snprintf(name, sizeof(name), "no_such_parameter_%d", i % 7);
        convoy_param_get(ctx, name, buf, sizeof(buf)); /* fails, recording on ctx */
    }
    return NULL;
}

START_TEST(last_error_read_while_others_fail)
{
    /* Proves: a thread may read the context's last error while another thread's calls
     * fail and record theirs: it gets a whole message (one of the others' or its own),
     * never a torn one (ThreadSanitizer reported this race before the copy under the
     * lock). */
    convoy_context_t *ctx = tu_init(on_cpu);
    atomic_store(&g_err_stop, 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, fail_calls, ctx), 0);
    for (int i = 0; i < 20000; i++) {
        const char *m = convoy_last_error(ctx);
        ck_assert_ptr_nonnull(m);
        ck_assert_msg(strncmp(m, "no error", 8) == 0 || strstr(m, "no_such_parameter_") != NULL,
                      "a torn or foreign message: %s", m);
    }
    atomic_store(&g_err_stop, 1);
    pthread_join(th, NULL);
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("robust_core");
    TCase *tc = tu_tcase(s, "wait", 60);
    tcase_add_test(tc, wait_returns_while_another_thread_inserts);
    tc = tu_tcase(s, "chore", 30);
    tcase_add_test(tc, chore_waits_refused_cpu);
    tcase_add_test(tc, chore_waits_refused_sim);
    tcase_add_test(tc, chore_may_insert_cpu);
    tcase_add_test(tc, chore_may_insert_sim);
    tc = tu_tcase(s, "close", 30);
    tcase_add_test(tc, wait_closes_partial_ring);
    tcase_add_test(tc, acquire_closes_partial_ring);
    tcase_add_test(tc, idle_device_takes_partial_ring);
    tcase_add_test(tc, idle_close_off_holds_ring);
    tc = tu_tcase(s, "overlap", 20);
    tcase_add_test(tc, overlapping_registration);
    tc = tu_tcase(s, "freed", 20);
    tcase_add_test(tc, freed_handle_refused_cpu);
    tcase_add_test(tc, freed_handle_refused_sim);
    tcase_add_test(tc, last_error_read_while_others_fail);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

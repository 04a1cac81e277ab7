/*
 * check_robust_chore: chores changed or failing under the runtime's feet (issue 11): a
 * chore removed while tasks of its class are pending fails them with a message instead
 * of calling NULL; a batch chore fails one member with convoy_task_fail and the message
 * names that member; a per-task chore is never reported as "the batch chore"; a task's
 * placement hint and completion callback (convoy_task_insert_ex); a chore's refused calls
 * log their own message while other threads record errors.
 */
#include "config.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tests/test_util.h"

static const char *const scheds[] = {"fifo", "batch"};

static atomic_int gate_open, gate_started;

/* Holds its thread (a CPU worker, a sim stream) until the test opens the gate. */
static int gate(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    atomic_fetch_add(&gate_started, 1);
    while (!atomic_load(&gate_open))
        sched_yield();
    return 0;
}

static int add_one(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    (*(long *)t->flows[0])++;
    return 0;
}

static convoy_class_t *new_class(convoy_context_t *ctx, const char *name, unsigned flags,
                                 convoy_device_kind_t kind, convoy_chore_fn fn)
{
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, name, 1, &rw, flags, &cls), CONVOY_SUCCESS);
    if (fn != NULL)
        ck_assert_int_eq(convoy_class_set_chore(cls, kind, fn), CONVOY_SUCCESS);
    return cls;
}

static uint64_t launches(convoy_context_t *ctx)
{
    convoy_stats_t st;
    convoy_get_stats(ctx, &st);
    return st.launches;
}

/* ---- 4. a chore removed while tasks are pending ------------------------------------ */

/* ngates gate tasks hold every thread that could run the victim (on sim: its launch is
 * queued behind one); the victim's chore is removed, then the gates open. */
static void removed_chore(convoy_context_t *ctx, convoy_device_kind_t kind, int ngates,
                          const char *where)
{
    atomic_store(&gate_open, 0);
    atomic_store(&gate_started, 0);
    convoy_class_t *g = new_class(ctx, "gate", 0, kind, gate);
    convoy_class_t *victim = new_class(ctx, "victim", 0, kind, add_one);
    long gv[4] = {0}, v = 0;
    convoy_data_t *gd[4], *vd;
    for (int i = 0; i < ngates; i++) {
        ck_assert_int_eq(convoy_data_new(ctx, &gv[i], sizeof(long), &gd[i]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_task_insert(ctx, g, NULL, 0, &gd[i]), CONVOY_SUCCESS);
    }
    while (kind == CONVOY_DEVICE_CPU ? atomic_load(&gate_started) < ngates
                                     : launches(ctx) < (uint64_t)ngates)
        sched_yield();
    ck_assert_int_eq(convoy_data_new(ctx, &v, sizeof(v), &vd), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, victim, NULL, 0, &vd), CONVOY_SUCCESS);
    if (kind != CONVOY_DEVICE_CPU) {
        /* Its launch is queued behind a gate: placed and launched with a chore. */
        while (launches(ctx) < (uint64_t)ngates + 1)
            sched_yield();
    }
    ck_assert_int_eq(convoy_class_set_chore(victim, kind, NULL), CONVOY_SUCCESS);
    atomic_store(&gate_open, 1);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED);
    char want[160];
    snprintf(want, sizeof(want), "class 'victim' has no chore for %s any more", where);
    tu_assert_error_has(ctx, "(class 'victim') failed", want, "1 task(s) failed");
    ck_assert_int_eq(v, 0);
}

static void removed_on_cpu(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    removed_chore(ctx, CONVOY_DEVICE_CPU, 1, "the CPUs");
}

static void removed_on_sim(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    removed_chore(ctx, CONVOY_DEVICE_SIM, 4, "sim0");
}

START_TEST(chore_removed_cpu)
{
    /* Proves a CPU worker does not call a chore removed while its task was queued: the
     * task fails, naming the class and the CPUs. */
    for (int s = 0; s < 2; s++)
        tu_with_presets((tu_presets_t){"devices", "host", "nthreads", "1", "bind", "0", "sched",
                                       scheds[s], NULL},
                        removed_on_cpu, NULL);
}
END_TEST

START_TEST(chore_removed_sim)
{
    /* Proves the same on sim, for a task already launched (its launch queued behind a
     * busy execute stream) when its chore is removed: every execute stream is held. */
    for (int s = 0; s < 2; s++)
        tu_with_presets((tu_presets_t){"devices", "sim", "nthreads", "1", "bind", "0", "sched",
                                       scheds[s], NULL},
                        removed_on_sim, NULL);
}
END_TEST

/* ---- 6. a batch chore fails one member --------------------------------------------- */

/* A member's argument: it fails when index == bad. */
typedef struct member_arg {
    int index, bad;
} member_arg_t;

/* Adds 1 to every member's long and fails the bad one with code 5 (convoy_task_fail);
 * returns 0: the others succeeded. */
static int batch_add(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    (void)stream;
    for (int i = 0; i < n; i++) {
        const member_arg_t *a = tasks[i]->args;
        (*(long *)tasks[i]->flows[0])++;
        if (a->index == a->bad)
            convoy_task_fail(tasks[i], 5);
    }
    return 0;
}

static void member_fails(convoy_context_t *ctx, convoy_device_kind_t kind, int ntasks, int bad,
                         const char *what)
{
    atomic_store(&gate_open, 0);
    atomic_store(&gate_started, 0);
    convoy_class_t *g = new_class(ctx, "gate", 0, CONVOY_DEVICE_CPU, gate);
    convoy_class_t *b = new_class(ctx, "b", CONVOY_CLASS_BATCHABLE, kind, NULL);
    ck_assert_int_eq(convoy_class_set_batch_chore(b, kind, batch_add), CONVOY_SUCCESS);
    long gv = 0, v[8] = {0};
    convoy_data_t *gd, *d[8];
    ck_assert_int_eq(convoy_data_new(ctx, &gv, sizeof(gv), &gd), CONVOY_SUCCESS);
    if (kind == CONVOY_DEVICE_CPU) {
        /* The single worker is held while the members queue, so they leave as one ring. */
        ck_assert_int_eq(convoy_task_insert(ctx, g, NULL, 0, &gd), CONVOY_SUCCESS);
        while (atomic_load(&gate_started) < 1)
            sched_yield();
    }
    for (int i = 0; i < ntasks; i++) {
        member_arg_t a = {.index = i, .bad = bad};
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(long), &d[i]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_task_insert(ctx, b, &a, sizeof(a), &d[i]), CONVOY_SUCCESS);
    }
    atomic_store(&gate_open, 1);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED);
    /* Task ids count from 0 per context: the gate is 0 on the CPUs. */
    char name[64];
    snprintf(name, sizeof(name), "task %d (class 'b') failed: ", bad + (kind == CONVOY_DEVICE_CPU));
    tu_assert_error_has(ctx, name, what, "failed it with code 5 ", "(convoy_task_fail)",
                        "1 task(s) failed and 0 were cancelled");
    for (int i = 0; i < ntasks; i++)
        ck_assert_msg(v[i] == (i == bad ? 0 : 1), "member %d holds %ld", i, v[i]);
}

static void member_fails_cpu(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    member_fails(ctx, CONVOY_DEVICE_CPU, 6, 3, "the CPU batch chore of class 'b'");
}

static void member_fails_sim(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    member_fails(ctx, CONVOY_DEVICE_SIM, 4, 2, "the batch chore of class 'b'");
}

START_TEST(batch_member_fails_cpu)
{
    /* Proves a CPU batch chore fails one member with convoy_task_fail: that member
     * alone fails, named, its write put back; the others succeed. */
    for (int s = 0; s < 2; s++)
        tu_with_presets((tu_presets_t){"devices", "host", "nthreads", "1", "bind", "0", "sched",
                                       scheds[s], NULL},
                        member_fails_cpu, NULL);
}
END_TEST

START_TEST(batch_member_fails_sim)
{
    /* Proves the same on sim, for a ring of 4 in one batch chore call (batch_max_tasks
     * 4): the failed member's output is discarded and the others come home. */
    tu_with_presets((tu_presets_t){"devices", "sim", "nthreads", "1", "bind", "0", "sched", "batch",
                                   "batch_max_tasks", "4", "batch_max_wait_us", "1000000",
                                   "batch_idle_close", "0", NULL},
                    member_fails_sim, NULL);
}
END_TEST

static int return_7(const convoy_task_view_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return 7;
}

static int batch_ok(const convoy_task_view_t *const *tasks, int n, void *stream)
{
    (void)tasks;
    (void)n;
    (void)stream;
    return 0;
}

static void per_task_wording(convoy_context_t *ctx, void *arg)
{
    convoy_device_kind_t kind = *(convoy_device_kind_t *)arg;
    convoy_class_t *p = new_class(ctx, "p", CONVOY_CLASS_BATCHABLE, kind, return_7);
    ck_assert_int_eq(convoy_class_set_batch_chore(p, kind, batch_ok), CONVOY_SUCCESS);
    long x = 0;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &x, sizeof(x), &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert(ctx, p, NULL, 0, &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED);
    tu_assert_error_has(ctx, "task 0 (class 'p') failed", "chore of class 'p' returned 7");
    ck_assert_msg(strstr(convoy_last_error(ctx), "batch chore") == NULL, "%s",
                  convoy_last_error(ctx));
}

START_TEST(per_task_chore_not_called_batch)
{
    /* Proves a failing per-task chore of a batchable class that also has a batch chore
     * is reported as "the chore", not "the batch chore", on the CPUs and on sim. */
    convoy_device_kind_t k = CONVOY_DEVICE_CPU;
    tu_with_presets((tu_presets_t){"devices", "host", "nthreads", "1", "bind", "0", NULL},
                    per_task_wording, &k);
    k = CONVOY_DEVICE_SIM;
    tu_with_presets((tu_presets_t){"devices", "sim", "nthreads", "1", "bind", "0", NULL},
                    per_task_wording, &k);
}
END_TEST

/* ---- 7. per-task placement and completion callback ---------------------------------- */

static atomic_int ran_cpu, ran_sim;

static int count_cpu(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    atomic_fetch_add(&ran_cpu, 1);
    return *(const int *)t->args; /* the task's return value */
}

static int count_sim(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    atomic_fetch_add(&ran_sim, 1);
    return *(const int *)t->args;
}

typedef struct seen {
    atomic_int calls, ok, failed, cancelled;
    _Atomic uint64_t id_sum;
    char msg[256];
    atomic_int msg_on_success;
} seen_t;

static void on_done(void *arg, uint64_t id, convoy_status_t outcome, const char *msg)
{
    seen_t *s = arg;
    atomic_fetch_add(&s->calls, 1);
    atomic_fetch_add(&s->id_sum, id);
    if (outcome == CONVOY_SUCCESS) {
        atomic_fetch_add(&s->ok, 1);
        if (msg != NULL)
            atomic_store(&s->msg_on_success, 1);
    } else if (strncmp(msg, "cancelled", 9) == 0) {
        atomic_fetch_add(&s->cancelled, 1);
    } else {
        atomic_fetch_add(&s->failed, 1);
        snprintf(s->msg, sizeof(s->msg), "%s", msg);
    }
}

static void placement(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *both, *sim_only;
    ck_assert_int_eq(convoy_class_new(ctx, "both", 1, &rw, 0, &both), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(both, CONVOY_DEVICE_CPU, count_cpu), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_class_set_chore(both, CONVOY_DEVICE_SIM, count_sim), CONVOY_SUCCESS);
    sim_only = new_class(ctx, "sim_only", 0, CONVOY_DEVICE_SIM, count_sim);
    long v[8] = {0};
    convoy_data_t *d[8];
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(long), &d[i]), CONVOY_SUCCESS);
    int zero = 0;
    atomic_store(&ran_cpu, 0);
    atomic_store(&ran_sim, 0);
    convoy_task_opts_t on_cpu = {.where = CONVOY_WHERE_CPU};
    convoy_task_opts_t on_sim0 = {.where = CONVOY_WHERE_ACCEL(0)};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(convoy_task_insert_ex(ctx, both, &zero, sizeof(zero), &d[i], &on_cpu),
                         CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&ran_cpu), 4);
    ck_assert_int_eq(atomic_load(&ran_sim), 0);
    /* Pinned to sim0, also for data the CPUs wrote last. */
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(convoy_task_insert_ex(ctx, both, &zero, sizeof(zero), &d[i], &on_sim0),
                         CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&ran_cpu), 4);
    ck_assert_int_eq(atomic_load(&ran_sim), 8);
    /* Refused: out of range, and a device kind the class has no chore for. */
    convoy_task_opts_t bad = {.where = CONVOY_WHERE_ACCEL(1)};
    ck_assert_int_eq(convoy_task_insert_ex(ctx, both, &zero, sizeof(zero), &d[0], &bad),
                     CONVOY_ERR_INVALID);
    tu_assert_error_has(ctx, "where 2 is out of range", "1 accelerator(s)");
    bad.where = -2;
    ck_assert_int_eq(convoy_task_insert_ex(ctx, both, &zero, sizeof(zero), &d[0], &bad),
                     CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_task_insert_ex(ctx, sim_only, &zero, sizeof(zero), &d[0], &on_cpu),
                     CONVOY_ERR_INVALID);
    tu_assert_error_has(ctx, "convoy_task_insert_ex(sim_only): pinned to the CPUs",
                        "no chore for it");
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
}

START_TEST(task_placement_hint)
{
    /* Proves convoy_task_insert_ex's where: tasks pinned to the CPUs or to sim0 run
     * there although the class has both chores, and a where out of range or without a
     * chore is CONVOY_ERR_INVALID naming it. */
    for (int s = 0; s < 2; s++)
        tu_with_presets((tu_presets_t){"devices", "sim", "nthreads", "2", "bind", "0", "sched",
                                       scheds[s], NULL},
                        placement, NULL);
}
END_TEST

static void callbacks(convoy_context_t *ctx, void *arg)
{
    convoy_device_kind_t kind = *(convoy_device_kind_t *)arg;
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "cb", 1, &rw, 0, &cls), CONVOY_SUCCESS);
    ck_assert_int_eq(
        convoy_class_set_chore(cls, kind, kind == CONVOY_DEVICE_CPU ? count_cpu : count_sim),
        CONVOY_SUCCESS);
    long a = 0, b = 0;
    convoy_data_t *da, *db;
    ck_assert_int_eq(convoy_data_new(ctx, &a, sizeof(a), &da), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_data_new(ctx, &b, sizeof(b), &db), CONVOY_SUCCESS);
    static seen_t seen;
    memset(&seen, 0, sizeof(seen));
    convoy_task_opts_t opts = {.done = on_done, .done_arg = &seen};
    int ok = 0, fail = 3;
    /* On a: 5 that succeed. On b: one that succeeds, one that fails, two cancelled. */
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, &ok, sizeof(ok), &da, &opts),
                         CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, &ok, sizeof(ok), &db, &opts), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, &fail, sizeof(fail), &db, &opts),
                     CONVOY_SUCCESS);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, &ok, sizeof(ok), &db, &opts),
                         CONVOY_SUCCESS);
    /* A refused insertion never calls back. */
    ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, &ok, sizeof(ok), NULL, &opts),
                     CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_ERR_TASK_FAILED);
    /* Every callback has run by the time the wait returns. */
    ck_assert_int_eq(atomic_load(&seen.calls), 9);
    ck_assert_int_eq(atomic_load(&seen.ok), 6);
    ck_assert_int_eq(atomic_load(&seen.failed), 1);
    ck_assert_int_eq(atomic_load(&seen.cancelled), 2);
    ck_assert_int_eq(atomic_load(&seen.id_sum), 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8);
    ck_assert_int_eq(atomic_load(&seen.msg_on_success), 0);
    ck_assert_msg(strstr(seen.msg, "returned 3") != NULL, "%s", seen.msg);
    /* Inserted after the wait that reported the failure: a successor of it is not
     * cancelled, and its callback says so. */
    ck_assert_int_eq(convoy_task_insert_ex(ctx, cls, &ok, sizeof(ok), &db, &opts), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&seen.ok), 7);
}

START_TEST(task_completion_callback_cpu)
{
    /* Proves the completion callback is called once per task with its id and outcome
     * (success, failure with the chore's message, cancellation), before convoy_wait
     * returns, and never for a refused insertion. */
    convoy_device_kind_t k = CONVOY_DEVICE_CPU;
    tu_with_presets((tu_presets_t){"devices", "host", "nthreads", "2", "bind", "0", NULL},
                    callbacks, &k);
}
END_TEST

START_TEST(task_completion_callback_sim)
{
    /* Proves the same on sim, where the progress thread completes the tasks. */
    convoy_device_kind_t k = CONVOY_DEVICE_SIM;
    tu_with_presets((tu_presets_t){"devices", "sim", "nthreads", "2", "bind", "0", NULL}, callbacks,
                    &k);
}
END_TEST

/* ---- refusals logged while other threads record errors ------------------------------ */

static convoy_context_t *refusing_ctx;
static atomic_int refusing_done;

/* Calls what a chore may not, a few times: each refusal is recorded on the context and
 * logged, while the program's thread records errors of its own on it. */
static int refuse_often(const convoy_task_view_t *t, void *stream)
{
    (void)stream;
    convoy_data_t *own;
    memcpy(&own, t->args, sizeof(own));
    for (int i = 0; i < 10; i++) {
        convoy_fini(refusing_ctx);
        convoy_data_free(own);
    }
    atomic_fetch_add(&refusing_done, 1);
    return 0;
}

static void refusals_race(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    refusing_ctx = ctx;
    atomic_store(&refusing_done, 0);
    convoy_class_t *cls = new_class(ctx, "refusing", 0, CONVOY_DEVICE_CPU, refuse_often);
    static long x[4];
    convoy_data_t *d[4];
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(convoy_data_new(ctx, &x[i], sizeof(x[i]), &d[i]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_task_insert(ctx, cls, &d[i], sizeof(d[i]), &d[i]), CONVOY_SUCCESS);
    }
    while (atomic_load(&refusing_done) < 4)
        ck_assert_int_eq(convoy_class_set_chore(cls, (convoy_device_kind_t)99, refuse_often),
                         CONVOY_ERR_INVALID);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(convoy_data_bytes(d[i]), sizeof(long)); /* not freed by the chores */
}

START_TEST(refusals_logged_while_errors_recorded)
{
    /* Proves a refused convoy_fini or convoy_data_free from a chore logs its own message
     * (the thread's copy), not the context's buffer, which the program's thread
     * overwrites meanwhile with its own errors: ThreadSanitizer reported that race in
     * make stress (tests/stress_misuse), and reports it here without the fix. */
    tu_with_presets((tu_presets_t){"devices", "host", "nthreads", "2", "bind", "0", NULL},
                    refusals_race, NULL);
}
END_TEST

/* ---- a chore set while tasks of its class are placed --------------------------------- */

static void toggled(convoy_context_t *ctx, void *arg)
{
    (void)arg;
    convoy_class_t *cls = new_class(ctx, "toggled", 0, CONVOY_DEVICE_CPU, add_one);
    ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, add_one), CONVOY_SUCCESS);
    static long x[2];
    convoy_data_t *d[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &x[i], sizeof(x[i]), &d[i]), CONVOY_SUCCESS);
    /* Chains: each successor is placed by the thread completing its predecessor (a
     * progress thread on sim) while this thread changes the sim chore. */
    for (int k = 0; k < 200; k++) {
        ck_assert_int_eq(convoy_task_insert(ctx, cls, NULL, 0, &d[k % 2]), CONVOY_SUCCESS);
        ck_assert_int_eq(convoy_class_set_chore(cls, CONVOY_DEVICE_SIM, k % 3 ? add_one : NULL),
                         CONVOY_SUCCESS);
    }
    convoy_status_t st = convoy_wait(ctx);
    ck_assert(st == CONVOY_SUCCESS || st == CONVOY_ERR_TASK_FAILED);
    if (st != CONVOY_SUCCESS)
        tu_assert_error_has(ctx, "no chore for sim0 any more");
}

START_TEST(chore_set_while_placed_sim)
{
    /* Proves placement reads a class's chores atomically while convoy_class_set_chore
     * changes them (sched/place.c, device/launch.c, the insertion's checks): tasks run on
     * the CPUs or sim, or fail saying the chore is gone; ThreadSanitizer reported the
     * plain reads in make stress (tests/stress_misuse), and reports them here without the
     * fix. */
    tu_with_presets((tu_presets_t){"devices", "host,sim", "nthreads", "2", "bind", "0", NULL},
                    toggled, NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("robust_chore");
    TCase *tc = tu_tcase(s, "removed", 30);
    tcase_add_test(tc, chore_removed_cpu);
    tcase_add_test(tc, chore_removed_sim);
    tc = tu_tcase(s, "member", 30);
    tcase_add_test(tc, batch_member_fails_cpu);
    tcase_add_test(tc, batch_member_fails_sim);
    tcase_add_test(tc, per_task_chore_not_called_batch);
    tc = tu_tcase(s, "options", 30);
    tcase_add_test(tc, task_placement_hint);
    tcase_add_test(tc, task_completion_callback_cpu);
    tcase_add_test(tc, task_completion_callback_sim);
    tc = tu_tcase(s, "refusals", 30);
    tcase_add_test(tc, refusals_logged_while_errors_recorded);
    tcase_add_test(tc, chore_set_while_placed_sim);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

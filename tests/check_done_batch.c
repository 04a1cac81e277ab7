/*
 * check_done_batch: completions counted together (convoy__done_batch_t, src/task.c). A
 * thread that completes many tasks in a row takes the counters every insertion writes
 * too (inflight, the wait generations' counts, tasks_completed) once per flush: until
 * the flush they still count the tasks, after it they are exact, and a batch holding as
 * many generations as it has slots flushes those before it takes another. On the sim
 * device, whose progress thread counts its rings' members so: a wait returns with the
 * device idle and every count exact, a task wait and an acquire are woken by the flush,
 * and cancelled successors completed in a batch are counted too.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "device/device.h"
#include "src/context.h"
#include "src/core.h"
#include "tests/task_records.h"
#include "tests/test_util.h"

enum { NGEN = CONVOY__DONE_BATCH_SLOTS + 2 };

static int64_t gen_count(convoy_context_t *ctx, int g)
{
    return atomic_load(&ctx->gen_count[g % CONVOY__WAIT_GENS]);
}

START_TEST(counted_at_the_flush)
{
    const char *const preset[] = {"devices", "host", "nthreads", "1", NULL};
    convoy_context_t *ctx = tu_init(preset);
    convoy_access_t ro = CONVOY_READ;
    convoy_class_t *cls;
    ck_assert_int_eq(convoy_class_new(ctx, "counted", 1, &ro, 0, &cls), CONVOY_SUCCESS);
    static int word;
    convoy_data_t *d;
    ck_assert_int_eq(convoy_data_new(ctx, &word, sizeof(word), &d), CONVOY_SUCCESS);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    int64_t base = atomic_load(&ctx->inflight);
    convoy_stats_t s0, s1;
    convoy_get_stats(ctx, &s0);

    convoy__task_t *t[NGEN];
    for (int g = 0; g < NGEN; g++)
        t[g] = tu_counted_task(ctx, cls, d, (uint64_t)g);
    convoy__done_batch_t b = {0};
    /* As many generations as the batch has slots: nothing is taken off yet. */
    for (int g = 0; g < CONVOY__DONE_BATCH_SLOTS; g++)
        convoy__task_complete_in(t[g], CONVOY__OK, NULL, &b);
    for (int g = 0; g < NGEN; g++)
        ck_assert_int_eq(gen_count(ctx, g), 1);
    ck_assert_int_eq(atomic_load(&ctx->inflight), base + NGEN);
    /* One more generation: the batch flushes the first ones before it counts it. */
    convoy__task_complete_in(t[CONVOY__DONE_BATCH_SLOTS], CONVOY__OK, NULL, &b);
    for (int g = 0; g < CONVOY__DONE_BATCH_SLOTS; g++)
        ck_assert_int_eq(gen_count(ctx, g), 0);
    ck_assert_int_eq(gen_count(ctx, CONVOY__DONE_BATCH_SLOTS), 1);
    ck_assert_int_eq(atomic_load(&ctx->inflight), base + 2);
    convoy__task_complete_in(t[NGEN - 1], CONVOY__OK, NULL, &b);
    convoy__done_flush(&b);
    for (int g = 0; g < NGEN; g++)
        ck_assert_int_eq(gen_count(ctx, g), 0);
    ck_assert_int_eq(atomic_load(&ctx->inflight), base);
    convoy_get_stats(ctx, &s1);
    ck_assert_uint_eq(s1.tasks_completed - s0.tasks_completed, NGEN);
    convoy__done_flush(&b); /* an empty batch: nothing changes */
    ck_assert_int_eq(atomic_load(&ctx->inflight), base);
    ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
    convoy_data_free(d);
    convoy_fini(ctx);
}
END_TEST

static int add_one(const convoy_task_view_t *t, void *s)
{
    (void)s;
    (*(int *)t->flows[0])++;
    return 0;
}

static int fail_chore(const convoy_task_view_t *t, void *s)
{
    (void)t;
    (void)s;
    return 7;
}

START_TEST(pipeline_counts_exact_at_waits)
{
    enum { N = 64, ROUNDS = 20 };
    const char *const preset[] = {"devices", "sim",   "nthreads", "2",     "bind", "0",
                                  "sched",   "batch", "verbose",  "error", NULL};
    convoy_context_t *ctx = tu_init(preset);
    convoy__device_t *dev = convoy__ctx_accel(ctx, 0);
    convoy_access_t rw = CONVOY_RW;
    convoy_class_t *add, *bad;
    ck_assert_int_eq(convoy_class_new(ctx, "add", 1, &rw, CONVOY_CLASS_BATCHABLE, &add), 0);
    ck_assert_int_eq(convoy_class_set_chore(add, CONVOY_DEVICE_SIM, add_one), 0);
    ck_assert_int_eq(convoy_class_new(ctx, "bad", 1, &rw, 0, &bad), 0);
    ck_assert_int_eq(convoy_class_set_chore(bad, CONVOY_DEVICE_SIM, fail_chore), 0);
    static int v[N];
    convoy_data_t *d[N];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(convoy_data_new(ctx, &v[i], sizeof(v[i]), &d[i]), CONVOY_SUCCESS);
    convoy_stats_t s0, s1;
    convoy_get_stats(ctx, &s0);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++)
            ck_assert_int_eq(convoy_task_insert(ctx, add, NULL, 0, &d[i]), CONVOY_SUCCESS);
        /* Woken by a flush: an acquire waits for the last task on its datum. */
        ck_assert_int_eq(convoy_data_acquire(d[round % N], CONVOY_READ), CONVOY_SUCCESS);
        ck_assert_int_eq(v[round % N], round + 1);
        ck_assert_int_eq(convoy_wait(ctx), CONVOY_SUCCESS);
        ck_assert_int_eq(atomic_load(&ctx->inflight), 0);
        ck_assert_int_eq(__atomic_load_n(&dev->load, __ATOMIC_RELAXED), 0);
    }
    convoy_get_stats(ctx, &s1);
    ck_assert_uint_eq(s1.tasks_completed - s0.tasks_completed, (uint64_t)N * ROUNDS);
    /* A failed task and the successors it cancels, all completed by the progress thread. */
    ck_assert_int_eq(convoy_task_insert(ctx, bad, NULL, 0, &d[0]), CONVOY_SUCCESS);
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(convoy_task_insert(ctx, add, NULL, 0, &d[0]), CONVOY_SUCCESS);
    ck_assert_int_ne(convoy_wait(ctx), CONVOY_SUCCESS);
    ck_assert_int_eq(atomic_load(&ctx->inflight), 0);
    ck_assert_int_eq(__atomic_load_n(&dev->load, __ATOMIC_RELAXED), 0);
    convoy_stats_t s2;
    convoy_get_stats(ctx, &s2);
    ck_assert_uint_eq(s2.tasks_completed, s1.tasks_completed);
    ck_assert_uint_eq(s2.tasks_failed - s1.tasks_failed, 1);
    ck_assert_uint_eq(s2.tasks_cancelled - s1.tasks_cancelled, 3);
    for (int i = 0; i < N; i++)
        convoy_data_free(d[i]);
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("done_batch");
    TCase *tc = tu_tcase(s, "flush", 60);
    tcase_add_test(tc, counted_at_the_flush);
    tcase_add_test(tc, pipeline_counts_exact_at_waits);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

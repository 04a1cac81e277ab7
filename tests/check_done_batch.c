/*
 * check_done_batch: completions counted together (convoy__done_batch_t, src/task.c). A
 * thread that completes many tasks in a row takes the counters every insertion writes
 * too (inflight, the wait generations' counts, tasks_completed) once per flush: until
 * the flush they still count the tasks, after it they are exact, and a batch holding as
 * many generations as it has slots flushes those before it takes another.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "src/core.h"
#include "tests/test_util.h"

enum { NGEN = CONVOY__DONE_BATCH_SLOTS + 2 };

/* A program task of cls over d, in wait generation gen, counted in flight as an
 * insertion counts it; not in the graph (the batch is what is tested). */
static convoy__task_t *counted_task(convoy_context_t *ctx, convoy_class_t *cls, convoy_data_t *d,
                                    uint64_t gen)
{
    convoy__task_t *t = calloc(1, sizeof(*t) + 3 * sizeof(void *));
    ck_assert_ptr_nonnull(t);
    t->cls = cls;
    atomic_init(&t->refs, 1);
    t->succ = t->succ_inline;
    t->succ_cap = CONVOY__TASK_INLINE_SUCC;
    t->args = t->inline_args;
    t->gen = gen;
    t->queue = 0;
    t->data[0] = d;
    atomic_fetch_add(&ctx->gen_count[gen % CONVOY__WAIT_GENS], 1);
    atomic_fetch_add(&ctx->inflight, 1);
    return t;
}

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
        t[g] = counted_task(ctx, cls, d, (uint64_t)g);
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

static Suite *suite(void)
{
    Suite *s = suite_create("done_batch");
    TCase *tc = tu_tcase(s, "flush", 30);
    tcase_add_test(tc, counted_at_the_flush);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

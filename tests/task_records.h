/*
 * Task records made by hand for tests of the completion path (src/task.c) on their own:
 * not in the graph, never run, completed by the test.
 */
#ifndef CONVOY_TESTS_TASK_RECORDS_H
#define CONVOY_TESTS_TASK_RECORDS_H

#include <check.h>
#include <stdatomic.h>

#include "src/context.h"
#include "src/core.h"

/* A program task of cls over d, in wait generation gen, counted in flight as an
 * insertion counts it. */
static inline convoy__task_t *tu_counted_task(convoy_context_t *ctx, convoy_class_t *cls,
                                              convoy_data_t *d, uint64_t gen)
{
    convoy__task_t *t = convoy__task_record_new(ctx, 1);
    ck_assert_ptr_nonnull(t);
    t->cls = cls;
    atomic_init(&t->refs, 1);
    t->succ = t->succ_inline;
    t->succ_cap = CONVOY__TASK_INLINE_SUCC;
    t->args = t->inline_args;
    t->gen = gen;
    t->queue = 0;
    t->ring_id = -1;
    t->data[0] = d;
    atomic_fetch_add(&ctx->gen_count[gen % CONVOY__WAIT_GENS], 1);
    atomic_fetch_add(&ctx->inflight, 1);
    return t;
}

#endif /* CONVOY_TESTS_TASK_RECORDS_H */

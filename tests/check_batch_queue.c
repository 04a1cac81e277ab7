/*
 * check_batch_queue: the batch scheduler's per-class queues (sched/batch/sched_batch.c),
 * driven through the component's push and pop with tasks that never run. Tasks leave in
 * the order they were pushed, in rings of at most the size asked, across the queue's
 * growth and its wrap-around; a task with a flow past batch_split_bytes holds its ring
 * back from leaving early for an idle device only while it is queued: once it has left,
 * the small tasks behind it leave at once again. Both schedulers' depth counts every
 * queued task, batchable or not: the CPU workers pop only when it is above 0. Pushes to
 * the CPU workers' queue, which take no lock, from four threads while another pops: every
 * task leaves once, each thread's tasks of a class in the order it pushed them.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched/sched.h"
#include "src/context.h"
#include "src/core.h"
#include "tests/test_util.h"

#define QUEUE 1 /* the first accelerator's queue (0 is the CPU workers') */

typedef struct env {
    convoy_context_t *ctx;
    void *state;
    convoy_class_t *cls;
    convoy_data_t *small, *big;
} env_t;

static void env_init(env_t *e)
{
    tu_pset_t ps;
    tu_ps_sim(&ps, "batch");
    tu_ps_set(&ps, "batch_split_bytes", "1M");
    e->ctx = tu_init(ps.kv);
    ck_assert_int_eq(convoy__sched_batch.init(e->ctx, 2, &e->state), CONVOY_SUCCESS);
    convoy_access_t ro = CONVOY_READ;
    ck_assert_int_eq(convoy_class_new(e->ctx, "q", 1, &ro, CONVOY_CLASS_BATCHABLE, &e->cls), 0);
    static char small[64];
    ck_assert_int_eq(convoy_data_new(e->ctx, small, sizeof(small), &e->small), 0);
    static char big[2 << 20];
    ck_assert_int_eq(convoy_data_new(e->ctx, big, sizeof(big), &e->big), 0);
}

static void env_fini(env_t *e)
{
    convoy__sched_batch.fini(e->state);
    convoy_fini(e->ctx);
}

/* A task of e->cls over d, ready at ready_ns, as task_alloc makes it (from its pool). */
static convoy__task_t *task_new(env_t *e, convoy_data_t *d, uint64_t ready_ns)
{
    convoy__task_t *t = convoy__task_record_new(e->ctx, 1);
    ck_assert_ptr_nonnull(t);
    atomic_init(&t->refs, 1);
    t->cls = e->cls;
    t->data[0] = d;
    t->t_ready_ns = ready_ns;
    return t;
}

static int pop(env_t *e, convoy__task_t **ring, int max, int idle)
{
    uint64_t deadline;
    return convoy__sched_batch.pop(e->state, QUEUE, ring, max, 1, idle, &deadline);
}

/* Pushed, popped in part, pushed past the queue's first size so that it grows while
 * wrapped around: every task leaves once, in the order it came. */
START_TEST(order_kept_across_growth_and_wrap)
{
    env_t e;
    env_init(&e);
    enum { N = 1000 };
    convoy__task_t **t = malloc(N * sizeof(*t));
    convoy__task_t *ring[N];
    for (int i = 0; i < N; i++)
        t[i] = task_new(&e, e.small, 100 + (uint64_t)i);
    int pushed = 0, popped = 0;
    for (; pushed < 50; pushed++)
        convoy__sched_batch.push(e.state, QUEUE, t[pushed]);
    /* Ring sizes asked (batch_max_tasks, 256, caps them), a push of 100 after each. */
    int sizes[] = {30, 40, 7, 200, 1, 256, 256, 256, 256, 256};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int n = pop(&e, ring, sizes[k], 1); /* idle: a partial ring leaves too */
        ck_assert_int_eq(n, CONVOY__MIN(sizes[k], pushed - popped));
        for (int i = 0; i < n; i++)
            REQUIRE(ring[i] == t[popped + i], "pop %zu: task %d left as %d", k, popped + i, i);
        popped += n;
        for (int i = 0; i < 100 && pushed < N; i++, pushed++)
            convoy__sched_batch.push(e.state, QUEUE, t[pushed]);
    }
    for (int n; (n = pop(&e, ring, 256, 1)) > 0; popped += n)
        for (int i = 0; i < n; i++)
            REQUIRE(ring[i] == t[popped + i], "task %d left as %d", popped + i, i);
    ck_assert_int_eq(pushed, N);
    ck_assert_int_eq(popped, N);
    ck_assert_int_eq(convoy__sched_batch.depth(e.state, QUEUE), 0);
    for (int i = 0; i < N; i++)
        convoy__task_unref(t[i]);
    free(t);
    env_fini(&e);
}
END_TEST

/* A large task queued keeps the ring from leaving early for an idle device; popped, it
 * no longer does. */
START_TEST(large_task_holds_ring_only_while_queued)
{
    env_t e;
    env_init(&e);
    convoy__task_t *t[4] = {task_new(&e, e.small, 1), task_new(&e, e.big, 2),
                            task_new(&e, e.small, 3), task_new(&e, e.small, 4)};
    convoy__task_t *ring[8];
    convoy__sched_batch.push(e.state, QUEUE, t[0]);
    ck_assert_int_eq(pop(&e, ring, 8, 1), 1); /* idle: a small task leaves at once */
    convoy__sched_batch.push(e.state, QUEUE, t[1]);
    convoy__sched_batch.push(e.state, QUEUE, t[2]);
    ck_assert_int_eq(pop(&e, ring, 8, 1), 0); /* a large one waits for company */
    ck_assert_int_eq(pop(&e, ring, 1, 1), 1); /* a full ring leaves: the large one */
    ck_assert_ptr_eq(ring[0], t[1]);
    convoy__sched_batch.push(e.state, QUEUE, t[3]);
    ck_assert_int_eq(pop(&e, ring, 8, 1), 2); /* nothing large left: at once */
    ck_assert_ptr_eq(ring[0], t[2]);
    ck_assert_ptr_eq(ring[1], t[3]);
    for (int i = 0; i < 4; i++)
        convoy__task_unref(t[i]);
    env_fini(&e);
}
END_TEST

/* depth, read without the queue's lock, against what push and pop did, on the CPU
 * workers' queue (whose rings never wait): a count short by one would leave a task
 * queued with every worker asleep. */
static void check_depth(env_t *e, const convoy__sched_component_t *sched)
{
    void *state;
    ck_assert_int_eq(sched->init(e->ctx, 2, &state), CONVOY_SUCCESS);
    convoy_access_t ro = CONVOY_READ;
    convoy_class_t *single;
    ck_assert_int_eq(convoy_class_new(e->ctx, sched->name, 1, &ro, 0, &single), 0);
    convoy__task_t *t[6], *ring[8];
    for (int i = 0; i < 6; i++) {
        t[i] = task_new(e, e->small, (uint64_t)i + 1);
        t[i]->cls = i % 2 ? single : e->cls;
        sched->push(state, 0, t[i]);
        ck_assert_int_eq(sched->depth(state, 0), i + 1);
        ck_assert_int_eq(sched->depth(state, 1), 0);
    }
    int left = 6;
    uint64_t deadline;
    while (left > 0) {
        int n = sched->pop(state, 0, ring, 8, 1, 0, &deadline);
        ck_assert_int_gt(n, 0);
        left -= n;
        ck_assert_int_eq(sched->depth(state, 0), left);
    }
    ck_assert_int_eq(sched->pop(state, 0, ring, 8, 1, 0, &deadline), 0);
    ck_assert_int_eq(sched->depth(state, 0), 0);
    sched->fini(state);
    for (int i = 0; i < 6; i++)
        convoy__task_unref(t[i]);
}

START_TEST(depth_counts_every_queued_task)
{
    env_t e;
    env_init(&e);
    check_depth(&e, &convoy__sched_batch);
    check_depth(&e, &convoy__sched_fifo);
    env_fini(&e);
}
END_TEST

enum { PUSHERS = 4, PER_PUSHER = 3000 };

typedef struct pusher {
    void *state;
    convoy__task_t **t; /* PER_PUSHER tasks, pushed in this order */
    pthread_barrier_t *start;
    atomic_int *done; /* pushers finished */
} pusher_t;

static void *pusher_main(void *arg)
{
    pusher_t *p = arg;
    pthread_barrier_wait(p->start); /* all at once, and the popper with them */
    for (int i = 0; i < PER_PUSHER; i++)
        convoy__sched_batch.push(p->state, 0, p->t[i]);
    atomic_fetch_add(p->done, 1);
    return NULL;
}

/* Four threads push to queue 0 (batchable and single tasks in turn) while this one pops
 * rings of up to 64: each task leaves once, each thread's tasks of one class in the order
 * it pushed them, and depth comes back to 0. */
START_TEST(cpu_queue_pushes_without_lock_keep_order)
{
    env_t e;
    env_init(&e);
    convoy_access_t ro = CONVOY_READ;
    convoy_class_t *single;
    ck_assert_int_eq(convoy_class_new(e.ctx, "single", 1, &ro, 0, &single), 0);
    pusher_t p[PUSHERS];
    pthread_barrier_t start;
    atomic_int done = 0;
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, PUSHERS + 1), 0);
    convoy__task_t **all = malloc(PUSHERS * PER_PUSHER * sizeof(*all));
    ck_assert_ptr_nonnull(all);
    for (int k = 0; k < PUSHERS; k++) {
        p[k] = (pusher_t){.state = e.state, .t = all + k * PER_PUSHER, .start = &start,
                          .done = &done};
        for (int i = 0; i < PER_PUSHER; i++) {
            convoy__task_t *t = task_new(&e, e.small, 1 + (uint64_t)i);
            t->cls = i % 2 ? single : e.cls;
            t->id = (uint64_t)(k * PER_PUSHER + i);
            p[k].t[i] = t;
        }
    }
    pthread_t th[PUSHERS];
    for (int k = 0; k < PUSHERS; k++)
        ck_assert_int_eq(pthread_create(&th[k], NULL, pusher_main, &p[k]), 0);
    int last[PUSHERS][2]; /* the last index seen of each pusher's batchable / single tasks */
    for (int k = 0; k < PUSHERS; k++)
        last[k][0] = last[k][1] = -1;
    char *seen = calloc(PUSHERS * PER_PUSHER, 1);
    ck_assert_ptr_nonnull(seen);
    int popped = 0, empty_after = 0; /* empty pops once every pusher was done */
    convoy__task_t *ring[64];
    uint64_t deadline;
    pthread_barrier_wait(&start);
    while (popped < PUSHERS * PER_PUSHER && empty_after < 1000) {
        int finished = atomic_load(&done) == PUSHERS;
        int n = convoy__sched_batch.pop(e.state, 0, ring, 64, 1, 0, &deadline);
        empty_after += finished && n == 0;
        for (int j = 0; j < n; j++) {
            int id = (int)ring[j]->id, k = id / PER_PUSHER, i = id % PER_PUSHER;
            REQUIRE(!seen[id], "task %d of pusher %d left twice", i, k);
            seen[id] = 1;
            REQUIRE(i > last[k][i % 2], "pusher %d's task %d left after its task %d", k, i,
                    last[k][i % 2]);
            last[k][i % 2] = i;
        }
        popped += n;
    }
    for (int k = 0; k < PUSHERS; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&start);
    ck_assert_int_eq(popped, PUSHERS * PER_PUSHER); /* none lost */
    ck_assert_int_eq(convoy__sched_batch.pop(e.state, 0, ring, 64, 1, 0, &deadline), 0);
    ck_assert_int_eq(convoy__sched_batch.depth(e.state, 0), 0);
    for (int i = 0; i < PUSHERS * PER_PUSHER; i++)
        convoy__task_unref(all[i]);
    free(all);
    free(seen);
    env_fini(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("batch_queue");
    TCase *tc = tu_tcase(s, "queue", 30);
    tcase_add_test(tc, order_kept_across_growth_and_wrap);
    tcase_add_test(tc, large_task_holds_ring_only_while_queued);
    tcase_add_test(tc, depth_counts_every_queued_task);
    tcase_add_test(tc, cpu_queue_pushes_without_lock_keep_order);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

/*
 * fifo: ready tasks in the order they became ready, one at a time, one copy per
 * submission. This is what GPU task runtimes do today and the baseline every
 * benchmark compares with.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "src/core.h"

typedef struct fifo_queue {
    _Alignas(CONVOY__LINE) pthread_mutex_t lock; /* each queue on lines of its own */
    convoy__task_t *head, *tail;
    atomic_int depth; /* written under the lock, read without it (fifo_depth) */
} fifo_queue_t;

typedef struct fifo_state {
    int nqueues;
    fifo_queue_t q[];
} fifo_state_t;

static convoy_status_t fifo_init(convoy_context_t *ctx, int nqueues, void **state_p)
{
    fifo_state_t *s = convoy__calloc_lines(ctx, sizeof(*s) + (size_t)nqueues * sizeof(fifo_queue_t),
                                           "the fifo scheduler");
    if (s == NULL)
        return CONVOY_ERR_NOMEM;
    s->nqueues = nqueues;
    for (int i = 0; i < nqueues; i++)
        convoy__mutex_init_short(&s->q[i].lock);
    *state_p = s;
    return CONVOY_SUCCESS;
}

static void fifo_fini(void *state)
{
    fifo_state_t *s = state;
    for (int i = 0; i < s->nqueues; i++)
        pthread_mutex_destroy(&s->q[i].lock);
    free(s);
}

static int fifo_push(void *state, int queue, convoy__task_t *task)
{
    fifo_queue_t *q = &((fifo_state_t *)state)->q[queue];
    task->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail != NULL)
        q->tail->next = task;
    else
        q->head = task;
    q->tail = task;
    convoy__sched_depth_add(&q->depth, 1);
    pthread_mutex_unlock(&q->lock);
    return 1;
}

static int fifo_pop(void *state, int queue, convoy__task_t **ring, int max, uint64_t now_ns,
                    int idle, uint64_t *deadline_ns_p)
{
    (void)max;
    (void)now_ns;
    (void)idle;
    fifo_queue_t *q = &((fifo_state_t *)state)->q[queue];
    pthread_mutex_lock(&q->lock);
    convoy__task_t *t = q->head;
    if (t != NULL) {
        q->head = t->next;
        if (q->head == NULL)
            q->tail = NULL;
        convoy__sched_depth_add(&q->depth, -1);
    }
    pthread_mutex_unlock(&q->lock);
    if (t == NULL) {
        *deadline_ns_p = UINT64_MAX;
        return 0;
    }
    ring[0] = t;
    return 1;
}

static int fifo_depth(void *state, int queue)
{
    return atomic_load_explicit(&((fifo_state_t *)state)->q[queue].depth, memory_order_acquire);
}

/* One submission per copy, in the given order. */
static void fifo_plan(void *state, const convoy__device_t *dev, convoy__copy_t *copies, int n,
                      convoy__plan_t *plan)
{
    (void)state;
    (void)dev;
    for (int i = 0; i < n; i++)
        plan->subs[i] = (convoy__submission_t){.first = i, .count = 1, .bytes = copies[i].bytes};
    plan->nsubs = n;
}

const convoy__sched_component_t convoy__sched_fifo = {
    .name = "fifo",
    .priority = 10,
    .doc = "baseline: one task at a time, one copy per flow",
    .params = NULL,
    .init = fifo_init,
    .fini = fifo_fini,
    .push = fifo_push,
    .pop = fifo_pop,
    .expedite = NULL,
    .depth = fifo_depth,
    .place = convoy__sched_place_locality,
    .plan = fifo_plan,
};

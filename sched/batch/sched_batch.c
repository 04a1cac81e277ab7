/*
 * batch: collects rings of ready tasks of one batchable class bound for one device and
 * hands them over as one unit; plans each stage's copies into bounded, fused
 * submissions with large copies split out (batch_plan.c). Tasks of other classes travel
 * as rings of one, in the order they became ready.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched/batch/batch.h"
#include "src/core.h"

const convoy__param_def_t convoy__batch_params[] = {
    {.name = "batch_max_tasks",
     .type = CONVOY__PARAM_INT,
     .def = "256",
     .min = 1,
     .max = 4096,
     .doc = "tasks per ring; PHYSICS.md 4: rings of 64-1024 tasks with one launch reach "
            "285-316k tasks/s, and 256 x 3 inputs stays near the 512-entry batch optimum"},
    {.name = "batch_max_wait_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "50",
     .min = 0,
     .max = 3.6e9, /* an hour */
     .doc = "a ring closes this long after its oldest task became ready, full or not (about "
            "one batched submission of 128 x 8 KiB, PHYSICS.md 1)"},
    {.name = "batch_idle_close",
     .type = CONVOY__PARAM_INT,
     .def = "1",
     .min = 0,
     .max = 1,
     .doc = "1: a ring being collected leaves at once when its device has nothing in flight "
            "(Nagle's rule: tasks wait to fill a ring only behind work already on its way, "
            "so a lone burst is not held for batch_max_wait_us); 0: only batch_max_tasks or "
            "batch_max_wait_us close a ring. PHYSICS.md 6: 32 small copies are usable 25.5 us "
            "after submission, half the default wait"},
    {.name = "batch_drop_wait_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "1000",
     .min = 0,
     .max = 3.6e9,
     .doc = "how long the frees of device copies that convoy_data_free leaves to the "
            "background wait to fill a ring: nothing waits for them, and one at a time each "
            "cost a ring (tiny_tasks' 65536 frees made 30000 rings of 1-6 on sim); an "
            "eviction that needs their memory takes it without them"},
    {.name = "batch_max_copies",
     .type = CONVOY__PARAM_INT,
     .def = "512",
     .min = 1,
     .max = 65536,
     .doc = "copies per submission; PHYSICS.md 1: no gain past ~512 entries, 2048 were "
            "slower"},
    {.name = "batch_max_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "4M",
     .min = 1,
     .max = 1125899906842624.0, /* 1P */
     .doc = "bytes per submission, bounding how long one submission holds the link (4 MiB "
            "is ~75 us at 54 GB/s, PHYSICS.md 1)"},
    {.name = "batch_split_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "1M",
     .min = 0,
     .max = 1125899906842624.0, /* 1P */
     .doc = "copies larger than this travel alone after the small ones, 0 turns the split "
            "off; PHYSICS.md 1: from 1 MiB one copy reaches 48.5 GB/s alone, and 3: a large "
            "copy in or ahead of a batch delays it 30-45x"},
    {0},
};

/* A class's queued tasks, oldest first: a circular array of their addresses, each with
 * bit 0 set when the task has a flow past batch_split_bytes (task records are
 * line-aligned, src/pool.h). An array, not a list through the tasks: a pop copies a
 * ring's addresses from consecutive lines, where walking a list took a cache miss per
 * task, on lines the inserting thread had just written, under the queue's lock (perf on
 * the H200: batch_pop was the progress thread's busiest function, 2026-12-04). */
typedef struct class_list {
    uintptr_t *slot; /* cap entries, a power of two; the oldest at first */
    int cap, first, count;
    int large; /* tasks with a flow past batch_split_bytes among them */
} class_list_t;

static convoy__task_t *slot_task(uintptr_t v)
{
    return (convoy__task_t *)(v & ~(uintptr_t)1);
}

static convoy__task_t *list_head(const class_list_t *cl)
{
    return slot_task(cl->slot[cl->first]);
}

/* Room in cl for one more task; 0 without memory. */
static int list_room(class_list_t *cl)
{
    if (cl->count < cl->cap)
        return 1;
    if (cl->cap >= 1 << 30)
        return 0; /* 2^30 tasks queued: an int would overflow; they go alone */
    int cap = cl->cap > 0 ? 2 * cl->cap : 64;
    uintptr_t *slot = malloc((size_t)cap * sizeof(*slot));
    if (slot == NULL)
        return 0;
    for (int i = 0; i < cl->count; i++)
        slot[i] = cl->slot[(cl->first + i) & (cl->cap - 1)];
    free(cl->slot);
    cl->slot = slot;
    cl->cap = cap;
    cl->first = 0;
    return 1;
}

/* The lock of a queue: the CPUs' (0) takes a mutex, since up to a worker per core pops it
 * and spinners would wait behind one that was preempted; an accelerator's has one consumer,
 * its progress thread, and the threads that push to it (the inserting threads, and workers
 * and progress threads whose completions make its tasks ready) hold it for a few stores: a
 * spin lock, one locked instruction a push where the mutex took four, and 120
 * instructions fewer (tiny_tasks' inserting thread, bench/host_profile.py). */
typedef struct batch_queue {
    _Alignas(CONVOY__LINE) pthread_mutex_t lock; /* queue 0; each queue on lines of its own */
    convoy__spin_t spin;                         /* the accelerators' queues */
    convoy__task_t *single_head, *single_tail;   /* non-batchable tasks */
    class_list_t *lists;                         /* by class id */
    int nlists;
    int fill; /* the ring size the consumer's last pop asked for (0: none yet): a push that
                 brings a class to it wakes the consumer */
    /* The CPUs' queue (0) only: tasks pushed without the lock, newest first, linked by
     * ->next; a pop moves them to the lists above under the lock, in push order. On a
     * line of its own with depth, apart from the lock and the lists: each push writes
     * both. */
    _Alignas(CONVOY__LINE) _Atomic(convoy__task_t *) incoming;
    atomic_int depth; /* read without the lock (batch_depth); written under it, or for
                         queue 0 added to atomically without it */
} batch_queue_t;

typedef struct batch_state {
    convoy__batch_limits_t lim;
    int wake_at; /* the ring size pop() takes from an idle device: min(max_tasks, max_inflight) */
    int nqueues;
    atomic_int expedited; /* waits open (expedite): rings leave without filling */
    batch_queue_t q[];
} batch_state_t;

static void queue_lock(batch_queue_t *q, int queue)
{
    if (queue == 0)
        pthread_mutex_lock(&q->lock);
    else
        convoy__spin_lock(&q->spin);
}

static void queue_unlock(batch_queue_t *q, int queue)
{
    if (queue == 0)
        pthread_mutex_unlock(&q->lock);
    else
        convoy__spin_unlock(&q->spin);
}

static convoy_status_t batch_init(convoy_context_t *ctx, int nqueues, void **state_p)
{
    batch_state_t *s = convoy__calloc_lines(
        ctx, sizeof(*s) + (size_t)nqueues * sizeof(batch_queue_t), "the batch scheduler");
    if (s == NULL)
        return CONVOY_ERR_NOMEM;
    const convoy__params_t *p = &ctx->params;
    s->lim = (convoy__batch_limits_t){
        .max_tasks = (int)convoy__param_int(p, "batch_max_tasks"),
        .max_wait_ns = (uint64_t)(convoy__param_double(p, "batch_max_wait_us") * 1000.0),
        .idle_close = (int)convoy__param_int(p, "batch_idle_close"),
        .drop_wait_ns = (uint64_t)(convoy__param_double(p, "batch_drop_wait_us") * 1000.0),
        .max_copies = (int)convoy__param_int(p, "batch_max_copies"),
        .max_bytes = (size_t)convoy__param_int(p, "batch_max_bytes"),
        .split_bytes = (size_t)convoy__param_int(p, "batch_split_bytes"),
    };
    s->wake_at = (int)CONVOY__MIN((int64_t)s->lim.max_tasks, convoy__param_int(p, "max_inflight"));
    s->nqueues = nqueues;
    for (int i = 0; i < nqueues; i++)
        convoy__mutex_init_short(&s->q[i].lock);
    *state_p = s;
    return CONVOY_SUCCESS;
}

static void batch_fini(void *state)
{
    batch_state_t *s = state;
    for (int i = 0; i < s->nqueues; i++) {
        pthread_mutex_destroy(&s->q[i].lock);
        for (int k = 0; k < s->q[i].nlists; k++)
            free(s->q[i].lists[k].slot);
        free(s->q[i].lists);
    }
    free(s);
}

/* May t stage in a copy the plan splits out (a flow it reads, past batch_split_bytes)?
 * Such a ring never leaves early for an idle device: small tasks that come within
 * batch_max_wait_us then go ahead of its large copy instead of behind it (PHYSICS.md 3:
 * 30-45x later behind it). A flow it only writes is never staged in. */
static int is_large(const batch_state_t *s, const convoy__task_t *t)
{
    if (s->lim.split_bytes == 0)
        return 0;
    for (int f = 0; f < t->cls->nflows; f++)
        if ((t->cls->modes[f] & CONVOY_READ) && t->data[f]->bytes > s->lim.split_bytes)
            return 1;
    return 0;
}

static void append(convoy__task_t **head, convoy__task_t **tail, convoy__task_t *t)
{
    t->next = NULL;
    if (*tail != NULL)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
}

/* Queue the task in q's lists, under its lock; large: it has a flow past
 * batch_split_bytes. The count of its class's list after it, 0 when it went to the
 * single list (not batchable, or no memory to list it by class: it still runs, alone). */
static int place_locked(batch_queue_t *q, convoy__task_t *task, int large)
{
    int id = task->cls->id;
    if (!(task->cls->flags & CONVOY_CLASS_BATCHABLE)) {
        append(&q->single_head, &q->single_tail, task);
        return 0;
    }
    if (id >= q->nlists) {
        int n = CONVOY__MAX(2 * q->nlists, id + 8);
        class_list_t *l = realloc(q->lists, (size_t)n * sizeof(*l));
        if (l == NULL) {
            append(&q->single_head, &q->single_tail, task);
            return 0;
        }
        for (int i = q->nlists; i < n; i++)
            l[i] = (class_list_t){0};
        q->lists = l;
        q->nlists = n;
    }
    class_list_t *cl = &q->lists[id];
    if (!list_room(cl)) {
        append(&q->single_head, &q->single_tail, task);
        return 0;
    }
    cl->slot[(cl->first + cl->count) & (cl->cap - 1)] = (uintptr_t)task | (uintptr_t)large;
    cl->large += large;
    return ++cl->count;
}

/* The tasks pushed to the CPUs' queue without its lock, into its lists in push order
 * (under the lock). */
static void take_incoming(batch_queue_t *q)
{
    convoy__task_t *t = atomic_exchange_explicit(&q->incoming, NULL, memory_order_acquire);
    convoy__task_t *fifo = NULL;
    while (t != NULL) { /* newest first: reverse */
        convoy__task_t *next = t->next;
        t->next = fifo;
        fifo = t;
        t = next;
    }
    while (fifo != NULL) {
        convoy__task_t *next = fifo->next;
        place_locked(q, fifo, 0);
        fifo = next;
    }
}

/* Onto the CPUs' queue's incoming list, without its lock: n tasks linked newest first,
 * from newest to oldest (oldest->next is set here). */
static void push_incoming(batch_queue_t *q, convoy__task_t *newest, convoy__task_t *oldest, int n)
{
    atomic_fetch_add_explicit(&q->depth, n, memory_order_relaxed); /* before: never short */
    convoy__task_t *head = atomic_load_explicit(&q->incoming, memory_order_relaxed);
    do
        oldest->next = head;
    while (!atomic_compare_exchange_weak_explicit(&q->incoming, &head, newest, memory_order_release,
                                                  memory_order_relaxed));
}

/* Wakes the consumer for a task that can leave at once (not batchable, or for the CPUs),
 * for the first task of a class (the consumer may be asleep with no deadline) and for
 * the task that fills a ring: the size the consumer's last pop asked for (less than
 * batch_max_tasks while its device is nearly full), or a multiple of wake_at. Any other
 * waits with its ring for the deadline the consumer already knows, and the consumer
 * looks at the queue again only when woken, at that deadline or when its own load
 * changes (device/pipeline.c). One wake-up per task cost the inserting thread a futex
 * call per task and the progress thread a pointless pop; a pop after every push (the
 * consumer polling a count of all pushes) cost the inserting thread the queue's lines,
 * taken back from the progress thread at every task. */
static int batch_push(void *state, int queue, convoy__task_t *task)
{
    batch_state_t *s = state;
    batch_queue_t *q = &s->q[queue];
    if (queue == 0) {
        /* The CPUs' queue: every push wakes (its rings never wait to fill), so nothing is
         * decided under the lock, and the push takes none: with 16 workers popping, the
         * lock's futex calls took 41% of an inserting thread's insertion (perf of
         * bench/overhead on the H200 host, doc/results.md, 2026-12-04 evening). */
        push_incoming(q, task, task, 1);
        return 1;
    }
    /* Marked here, where the inserting thread has the data in its cache: in pop each
     * datum would be a cache miss on the progress thread, under the queue's lock. */
    int large = is_large(s, task);
    queue_lock(q, queue);
    convoy__sched_depth_add(&q->depth, 1);
    int count = place_locked(q, task, large);
    /* Decided under the lock: q->fill is the pop's to write. */
    int wake = count <= 1 || count == q->fill || count % s->wake_at == 0;
    queue_unlock(q, queue);
    return wake;
}

/* Several tasks at once: to the CPUs' queue as one list (one exchange of its head, one
 * count), elsewhere one by one. */
static int batch_push_many(void *state, int queue, convoy__task_t *const *tasks, int n)
{
    batch_state_t *s = state;
    batch_queue_t *q = &s->q[queue];
    if (queue != 0) {
        int wake = 0;
        for (int i = 0; i < n; i++)
            wake |= batch_push(state, queue, tasks[i]);
        return wake;
    }
    for (int i = n - 1; i > 0; i--) /* newest first, as pushed one by one */
        tasks[i]->next = tasks[i - 1];
    push_incoming(q, tasks[n - 1], tasks[0], n);
    return 1;
}

/* When the ring being collected in cl closes if it does not fill (0: now). CPU workers
 * (queue 0) move no data: a ring there never waits to fill. Nor do flushes home: something
 * waits for them, and a burst of them (a ring's completion making its successors ready)
 * is queued before the next pop. Nor does a ring for an idle device (batch_idle_close):
 * it would only wait. Drops (convoy_data_free's background frees) wait longest: no one
 * waits for them. An open wait closes every ring. */
static uint64_t closes_at(batch_state_t *s, int queue, const class_list_t *cl, int idle)
{
    const convoy__task_t *head = list_head(cl);
    int internal = head->cls->internal;
    int drop = internal == CONVOY__CLS_DROP;
    if (queue == 0 || (internal != CONVOY__CLS_USER && !drop) ||
        (idle && s->lim.idle_close && cl->large == 0 && !drop) ||
        atomic_load_explicit(&s->expedited, memory_order_acquire) > 0)
        return 0;
    return head->t_ready_ns + (drop ? s->lim.drop_wait_ns : s->lim.max_wait_ns);
}

static int batch_pop(void *state, int queue, convoy__task_t **ring, int max, uint64_t now_ns,
                     int idle, uint64_t *deadline_ns_p)
{
    batch_state_t *s = state;
    batch_queue_t *q = &s->q[queue];
    int limit = CONVOY__MIN(max, s->lim.max_tasks);
    uint64_t deadline = UINT64_MAX;
    int n = 0;
    queue_lock(q, queue);
    if (queue == 0)
        take_incoming(q);
    q->fill = limit;
    /* The ring to leave: the class whose oldest task is oldest among those that are
     * full or have waited long enough; a non-batchable task older than it goes first. */
    class_list_t *pick = NULL;
    for (int i = 0; i < q->nlists; i++) {
        class_list_t *cl = &q->lists[i];
        if (cl->count == 0)
            continue;
        uint64_t closes = closes_at(s, queue, cl, idle);
        if (cl->count >= limit || now_ns >= closes) {
            if (pick == NULL || list_head(cl)->t_ready_ns < list_head(pick)->t_ready_ns)
                pick = cl;
        } else if (closes < deadline) {
            deadline = closes;
        }
    }
    convoy__task_t *single = q->single_head;
    if (single != NULL && (pick == NULL || single->t_ready_ns <= list_head(pick)->t_ready_ns)) {
        q->single_head = single->next;
        if (q->single_head == NULL)
            q->single_tail = NULL;
        ring[n++] = single;
    } else if (pick != NULL) {
        while (n < limit && pick->count > 0) {
            uintptr_t v = pick->slot[pick->first];
            pick->first = (pick->first + 1) & (pick->cap - 1);
            pick->count--;
            pick->large -= (int)(v & 1);
            ring[n++] = slot_task(v);
        }
    }
    if (queue == 0) /* pushes add without the lock */
        atomic_fetch_sub_explicit(&q->depth, n, memory_order_release);
    else
        convoy__sched_depth_add(&q->depth, -n);
    queue_unlock(q, queue);
    *deadline_ns_p = deadline;
    return n;
}

static void batch_expedite(void *state, int begin)
{
    atomic_fetch_add(&((batch_state_t *)state)->expedited, begin ? 1 : -1);
}

static int batch_depth(void *state, int queue)
{
    return atomic_load_explicit(&((batch_state_t *)state)->q[queue].depth, memory_order_acquire);
}

static void batch_plan(void *state, const convoy__device_t *dev, convoy__copy_t *copies, int n,
                       convoy__plan_t *plan)
{
    convoy__batch_plan(&((batch_state_t *)state)->lim, dev, copies, n, plan);
}

const convoy__sched_component_t convoy__sched_batch = {
    .name = "batch",
    .priority = 20,
    .doc = "rings of batchable tasks, fused bounded copies, large copies split out",
    .params = convoy__batch_params,
    .init = batch_init,
    .fini = batch_fini,
    .push = batch_push,
    .push_many = batch_push_many,
    .pop = batch_pop,
    .expedite = batch_expedite,
    .depth = batch_depth,
    .place = convoy__sched_place_locality,
    .plan = batch_plan,
};

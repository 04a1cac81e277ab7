/*
 * The sim device's streams, events and idle wait.
 *
 * Each stream is a thread that executes its queue in order and does the real work (the
 * bytes are copied, the chore runs) as soon as it reaches an op. Beside that the device
 * models when the op would have ended on the hardware of PHYSICS.md: an op starts at the
 * latest of the end of the op before it on its stream, its enqueue time and the modelled
 * completion of the events it waits for; its cost comes from the parameters; the
 * bandwidth part of a copy also holds a per-direction link timeline shared by every
 * stream of the device, so that two streams do not move more than the link carries.
 *
 * A copy is timed (and takes its place on the link) when it is enqueued, unless a launch
 * or a wait whose length is not yet known is ahead of it on its stream; then it is timed
 * when the stream thread reaches it. So the link serves copies in the order the host
 * submitted them, whatever the threads' scheduling, for copy-only streams at least.
 *
 * An event completes when its stream has executed it and the clock has reached its
 * modelled time, so when the real work is slower than the model (first-touch page
 * faults, a loaded host) the real work sets the pace. Nothing spins: stream threads
 * sleep on condition variables, and idle_wait sleeps until the next modelled completion
 * it knows of.
 */
#include "config.h"

#define CONVOY__SIM_INTERNAL 1
#include "device/sim/sim.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/util.h"

static convoy__sim_dev_t *sim_dev(convoy__device_t *d)
{
    return (convoy__sim_dev_t *)d;
}

static convoy__sim_stream_t *sim_stream(convoy__stream_t *s)
{
    return (convoy__sim_stream_t *)(void *)s;
}

static convoy__sim_event_t *sim_event(convoy__event_t *e)
{
    return (convoy__sim_event_t *)(void *)e;
}

static uint64_t ns_of(double ns)
{
    return ns <= 0.0 ? 0 : (uint64_t)(ns + 0.5);
}

/* ---- completion times idle_wait sleeps towards ------------------------------------ */

static void heap_swap(uint64_t *h, int a, int b)
{
    uint64_t t = h[a];
    h[a] = h[b];
    h[b] = t;
}

/* Push t; 0 when the heap cannot grow (the caller then wakes idle_wait at once). */
static int heap_push(convoy__sim_dev_t *dev, uint64_t t)
{
    if (dev->heap_len == dev->heap_cap) {
        int cap = dev->heap_cap ? 2 * dev->heap_cap : 64;
        uint64_t *h = realloc(dev->heap, (size_t)cap * sizeof *h);
        if (!h)
            return 0;
        dev->heap = h;
        dev->heap_cap = cap;
    }
    uint64_t *h = dev->heap;
    int i = dev->heap_len++;
    h[i] = t;
    while (i > 0 && h[(i - 1) / 2] > h[i]) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return 1;
}

static void heap_pop(convoy__sim_dev_t *dev)
{
    uint64_t *h = dev->heap;
    int n = --dev->heap_len;
    h[0] = h[n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m])
            m = l;
        if (r < n && h[r] < h[m])
            m = r;
        if (m == i)
            break;
        heap_swap(h, i, m);
        i = m;
    }
}

/* Drop the times that have passed and count them as completed events. */
static void heap_prune_locked(convoy__sim_dev_t *dev, uint64_t now)
{
    while (dev->heap_len > 0 && dev->heap[0] <= now) {
        heap_pop(dev);
        dev->done_events++;
    }
}

/* A record executed with modelled completion 'at': make sure idle_wait learns of it,
 * at once when it has passed, else when the clock reaches it. */
static void sim_note_record_locked(convoy__sim_dev_t *dev, uint64_t at)
{
    uint64_t now = convoy__now_ns();
    heap_prune_locked(dev, now);
    if (at <= now || !heap_push(dev, at)) {
        dev->done_events++;
        if (dev->idle_sleeping)
            pthread_cond_broadcast(&dev->idle_cond);
    } else if (dev->idle_sleeping && dev->heap[0] == at) {
        /* A new earliest time: the sleepers' deadlines are later than it. */
        pthread_cond_broadcast(&dev->idle_cond);
    }
}

/* ---- the stream thread ------------------------------------------------------------ */

static void sim_event_unref_locked(convoy__sim_dev_t *dev, convoy__sim_event_t *ev)
{
    if (--ev->refs > 0)
        return;
    if (ev->prev)
        ev->prev->next = ev->next;
    else
        dev->events = ev->next;
    if (ev->next)
        ev->next->prev = ev->prev;
    free(ev);
}

/* Find the record of submission seq in the log (sorted by seq); NULL when not logged. */
static convoy__sim_record_t *sim_find_record_locked(convoy__sim_dev_t *dev, uint64_t seq)
{
    int lo = 0, hi = dev->nrecords;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (dev->records[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < dev->nrecords && dev->records[lo].seq == seq ? &dev->records[lo] : NULL;
}

uint64_t convoy__sim_time_copy_locked(convoy__sim_dev_t *dev, uint64_t after, convoy__sim_op_t *op)
{
    uint64_t start = CONVOY__MAX(after, op->enqueue_ns);
    size_t total = op->dir_bytes[0] + op->dir_bytes[1] + op->dir_bytes[2];
    uint64_t end = start + op->overhead_ns + ns_of((double)total * dev->ns_per_byte);
    pthread_mutex_lock(&dev->link->lock);
    for (int d = 0; d < 3; d++) {
        if (op->dir_bytes[d] == 0)
            continue;
        /* The link carries one transfer at a time in each direction, in the order they
         * are timed; a busy link delays the end, not the start. */
        uint64_t xs = CONVOY__MAX(dev->link->free_at[d], start);
        uint64_t xe = xs + ns_of((double)op->dir_bytes[d] * dev->ns_per_byte);
        dev->link->free_at[d] = xe;
        end = CONVOY__MAX(end, xe);
    }
    pthread_mutex_unlock(&dev->link->lock);
    convoy__sim_record_t *rec = sim_find_record_locked(dev, op->seq);
    if (rec)
        rec->complete_ns = end;
    return end;
}

/* An op whose end was not known at enqueue has run: once none is left, enqueues can
 * time copies again, from the stream's clock. */
static void sim_untimed_done(convoy__sim_stream_t *s)
{
    if (--s->untimed == 0)
        s->tail_vt = s->vt;
}

/* Copy the bytes of one copy. A large copy goes in pieces with a yield between them:
 * on a real GPU the copy engines move it while the host and the SMs get on with the small
 * work beside it, but here it is host CPU time, and on a machine with few cores one
 * long memcpy would hold the small work's threads off the CPU for its whole length. */
static void sim_copy_bytes(void *dst, const void *src, size_t bytes)
{
    enum { PIECE = 256 << 10 };
    for (size_t off = 0; off < bytes; off += PIECE) {
        memcpy((char *)dst + off, (const char *)src + off, CONVOY__MIN((size_t)PIECE, bytes - off));
        if (bytes > PIECE)
            sched_yield();
    }
}

/* Time the copy if enqueue could not, then copy the bytes (without the lock). */
static void sim_run_copy(convoy__sim_dev_t *dev, convoy__sim_stream_t *s, convoy__sim_op_t *op)
{
    if (op->timed) {
        s->vt = op->end_ns;
    } else {
        s->vt = convoy__sim_time_copy_locked(dev, s->vt, op);
        sim_untimed_done(s);
    }
    if (op->fail_async) { /* as a GPU fault: nothing copied, the stream's next event says so */
        s->fail_pending = 1;
        if (dev->sticky) /* as a fault ends a GPU's context: every later query fails */
            atomic_store_explicit(&dev->faulted, 1, memory_order_relaxed);
        return;
    }
    if (convoy__sim_context_lost(dev)) /* nothing runs in a context a fault ended */
        return;
    pthread_mutex_unlock(&dev->lock);
    for (int i = 0; i < op->ncopies; i++)
        sim_copy_bytes(op->copies[i].dst, op->copies[i].src, op->copies[i].bytes);
    pthread_mutex_lock(&dev->lock);
}

/* Run the chore (without the lock); it costs the launch latency plus its own time. */
static void sim_run_launch(convoy__sim_dev_t *dev, convoy__sim_stream_t *s, convoy__sim_op_t *op)
{
    uint64_t start = CONVOY__MAX(s->vt, op->enqueue_ns);
    pthread_mutex_unlock(&dev->lock);
    if (dev->launch_late_ns > 0) /* not modelled: the chore starts late in real time */
        convoy__sleep_until_ns(convoy__now_ns() + dev->launch_late_ns);
    uint64_t t0 = convoy__now_ns();
    int rc = convoy__sim_context_lost(dev) ? 0 : op->fn(op->arg, NULL);
    uint64_t t1 = convoy__now_ns();
    /* The pipeline reads a chore's outcome from its argument, not from here. */
    if (rc != 0)
        convoy__log_debug("%s: stream %d: chore returned %d", dev->base.name, s->id, rc);
    pthread_mutex_lock(&dev->lock);
    s->vt = start + ns_of(dev->launch_ns) + (t1 - t0);
    sim_untimed_done(s);
}

static void sim_run_record(convoy__sim_dev_t *dev, convoy__sim_stream_t *s, convoy__sim_op_t *op)
{
    convoy__sim_event_t *ev = op->event;
    uint64_t at = s->vt;
    if (op->gen > ev->exec_gen) {
        ev->exec_gen = op->gen;
        ev->exec_at = at;
    }
    /* A generation re-armed since this op was queued is not the one queries see. */
    if (op->gen == ev->gen) {
        atomic_store_explicit(&ev->failed,
                              s->fail_pending ||
                                  atomic_load_explicit(&dev->faulted, memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&ev->done_at, at, memory_order_release);
    }
    s->fail_pending = 0;
    sim_note_record_locked(dev, at);
    if (dev->exec_waiters > 0)
        pthread_cond_broadcast(&dev->exec_cond);
    sim_event_unref_locked(dev, ev);
}

/* Wait until the event's generation (or a newer one) has been executed by its stream,
 * then start no earlier than its modelled completion. */
static void sim_run_wait(convoy__sim_dev_t *dev, convoy__sim_stream_t *s, convoy__sim_op_t *op)
{
    convoy__sim_event_t *ev = op->event;
    while (ev->exec_gen < op->gen) {
        dev->exec_waiters++;
        pthread_cond_wait(&dev->exec_cond, &dev->lock);
        dev->exec_waiters--;
    }
    s->vt = CONVOY__MAX(s->vt, ev->exec_at);
    sim_untimed_done(s);
    sim_event_unref_locked(dev, ev);
}

static void *sim_stream_main(void *arg)
{
    convoy__sim_stream_t *s = arg;
    convoy__sim_dev_t *dev = s->dev;

    convoy__thread_mark("a sim stream thread");
    convoy__thread_name("%s.s%d", dev->base.name, s->id);
    pthread_mutex_lock(&dev->lock);
    for (;;) {
        convoy__sim_op_t *op = s->head;
        if (!op) {
            if (s->closing)
                break;
            pthread_cond_wait(&s->cond, &dev->lock);
            continue;
        }
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        switch (op->kind) {
        case CONVOY__SIM_OP_COPY: sim_run_copy(dev, s, op); break;
        case CONVOY__SIM_OP_LAUNCH: sim_run_launch(dev, s, op); break;
        case CONVOY__SIM_OP_RECORD: sim_run_record(dev, s, op); break;
        case CONVOY__SIM_OP_WAIT: sim_run_wait(dev, s, op); break;
        }
        free(op);
        s->nexecuted++;
        if (dev->exec_waiters > 0)
            pthread_cond_broadcast(&dev->exec_cond);
    }
    pthread_mutex_unlock(&dev->lock);
    return NULL;
}

void convoy__sim_enqueue_locked(convoy__sim_stream_t *s, convoy__sim_op_t *op)
{
    if (op->kind == CONVOY__SIM_OP_COPY && s->untimed == 0) {
        op->timed = 1;
        op->end_ns = s->tail_vt = convoy__sim_time_copy_locked(s->dev, s->tail_vt, op);
    } else if (op->kind != CONVOY__SIM_OP_RECORD) {
        s->untimed++;
    }
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->nenqueued++;
    pthread_cond_signal(&s->cond);
}

/* Wait until the stream's thread has executed every op enqueued so far, then until the
 * model's clock has reached the last one's end. Fails only by injection (sim_fail_sync). */
convoy_status_t convoy__sim_stream_sync(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    convoy__sim_stream_t *s = sim_stream(stream);
    if (convoy__sim_calls_fail(dev))
        return convoy__sim_lost(dev, "stream_sync");
    pthread_mutex_lock(&dev->lock);
    uint64_t n = ++dev->nsyncs;
    if (dev->fail_sync > 0 && n == (uint64_t)dev->fail_sync) {
        pthread_mutex_unlock(&dev->lock);
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: injected failure of stream_sync %llu (sim_fail_sync)", d->name,
                             (unsigned long long)n);
    }
    uint64_t vt = convoy__sim_stream_drain_locked(dev, s);
    pthread_mutex_unlock(&dev->lock);
    convoy__sleep_until_ns(vt);
    return CONVOY_SUCCESS;
}

uint64_t convoy__sim_stream_drain_locked(convoy__sim_dev_t *dev, convoy__sim_stream_t *s)
{
    uint64_t target = s->nenqueued;
    while (s->nexecuted < target) {
        dev->exec_waiters++;
        pthread_cond_wait(&dev->exec_cond, &dev->lock);
        dev->exec_waiters--;
    }
    return s->vt;
}

/* ---- streams ---------------------------------------------------------------------- */

convoy_status_t convoy__sim_stream_create(convoy__device_t *d, convoy__stream_t **stream_p)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (!stream_p)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: stream_create: NULL stream_p",
                             d->name);
    convoy__sim_stream_t *s = convoy__calloc(d->ctx, 1, sizeof *s, "sim stream");
    if (!s)
        return CONVOY_ERR_NOMEM;
    s->dev = dev;
    int rc = pthread_cond_init(&s->cond, NULL);
    if (rc != 0) {
        free(s);
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: stream_create: pthread_cond_init returned %d", d->name, rc);
    }
    pthread_mutex_lock(&dev->lock);
    s->id = dev->next_stream_id++;
    s->vt = s->tail_vt = convoy__now_ns();
    pthread_mutex_unlock(&dev->lock);

    rc = pthread_create(&s->thread, NULL, sim_stream_main, s);
    if (rc != 0) {
        pthread_cond_destroy(&s->cond);
        free(s);
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: stream_create: pthread_create returned %d", d->name, rc);
    }
    pthread_mutex_lock(&dev->lock);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->lock);
    *stream_p = (convoy__stream_t *)(void *)s;
    return CONVOY_SUCCESS;
}

/* Work already queued still runs (as on a GPU); returns once the thread has drained it. */
void convoy__sim_stream_destroy(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    convoy__sim_stream_t *s = sim_stream(stream);
    if (!s)
        return;
    pthread_mutex_lock(&dev->lock);
    s->closing = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&dev->lock);
    pthread_join(s->thread, NULL);

    pthread_mutex_lock(&dev->lock);
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&dev->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

void *convoy__sim_stream_native(convoy__device_t *d, convoy__stream_t *stream)
{
    (void)d;
    (void)stream;
    return NULL; /* sim chores do their work on the stream thread, on device pointers */
}

/* ---- events ----------------------------------------------------------------------- */

convoy_status_t convoy__sim_event_create(convoy__device_t *d, convoy__event_t **event_p)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (!event_p)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: event_create: NULL event_p", d->name);
    convoy__sim_event_t *ev = convoy__calloc(d->ctx, 1, sizeof *ev, "sim event");
    if (!ev)
        return CONVOY_ERR_NOMEM;
    ev->refs = 1;
    atomic_init(&ev->done_at, 0); /* never recorded: complete, as on CUDA */
    atomic_init(&ev->failed, 0);
    pthread_mutex_lock(&dev->lock);
    ev->next = dev->events;
    if (dev->events)
        dev->events->prev = ev;
    dev->events = ev;
    pthread_mutex_unlock(&dev->lock);
    *event_p = (convoy__event_t *)(void *)ev;
    return CONVOY_SUCCESS;
}

/* The owner lets go; ops still queued that name the event keep it alive. */
void convoy__sim_event_destroy(convoy__device_t *d, convoy__event_t *event)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    if (!event)
        return;
    pthread_mutex_lock(&dev->lock);
    sim_event_unref_locked(dev, sim_event(event));
    pthread_mutex_unlock(&dev->lock);
}

/* Queue an op that names ev (taking a reference); the caller has checked s and ev. */
static convoy_status_t sim_event_op(convoy__sim_dev_t *dev, convoy__sim_stream_t *s,
                                    convoy__sim_event_t *ev, int kind, int quiet)
{
    convoy__sim_op_t *op = convoy__calloc(dev->base.ctx, 1, sizeof *op, "sim event op");
    if (!op)
        return CONVOY_ERR_NOMEM;
    op->kind = kind;
    op->event = ev;
    op->enqueue_ns = convoy__now_ns();
    pthread_mutex_lock(&dev->lock);
    if (kind == CONVOY__SIM_OP_RECORD) {
        ev->gen++; /* re-arms an event recorded before */
        atomic_store_explicit(&ev->done_at, UINT64_MAX, memory_order_relaxed);
        atomic_store_explicit(&ev->failed, 0, memory_order_relaxed);
        atomic_store_explicit(&ev->quiet, quiet, memory_order_relaxed);
        dev->counters.records++;
        dev->counters.quiet_records += (uint64_t)quiet;
    } else if (ev->gen == 0) {
        pthread_mutex_unlock(&dev->lock); /* never recorded: nothing to wait for */
        free(op);
        return CONVOY_SUCCESS;
    }
    op->gen = ev->gen;
    ev->refs++;
    convoy__sim_enqueue_locked(s, op);
    pthread_mutex_unlock(&dev->lock);
    return CONVOY_SUCCESS;
}

convoy_status_t convoy__sim_lost(convoy__sim_dev_t *dev, const char *what)
{
    return convoy__error(dev->base.ctx, CONVOY_ERR_DEVICE,
                         "%s: %s: the device's context ended with a copy that failed when it "
                         "ran (sim_sticky_errors)",
                         dev->base.name, what);
}

static convoy_status_t sim_check_pair(convoy__sim_dev_t *dev, const char *what,
                                      convoy__sim_stream_t *s, convoy__sim_event_t *ev)
{
    if (convoy__sim_calls_fail(dev))
        return convoy__sim_lost(dev, what);
    if (!s || !ev)
        return convoy__error(dev->base.ctx, CONVOY_ERR_INVALID, "%s: %s: NULL %s", dev->base.name,
                             what, s ? "event" : "stream");
    if (s->dev != dev)
        return convoy__error(dev->base.ctx, CONVOY_ERR_INVALID, "%s: %s: stream %d belongs to %s",
                             dev->base.name, what, s->id, s->dev->base.name);
    return CONVOY_SUCCESS;
}

/* Count one more call in *calls (under the lock); 1 when it is among the `count` calls
 * from the `first`-th on that fault injection fails (first 0: none). *n_p: its number. */
static int sim_injected(convoy__sim_dev_t *dev, uint64_t *calls, int64_t first, int64_t count,
                        uint64_t *n_p)
{
    pthread_mutex_lock(&dev->lock);
    uint64_t n = ++*calls;
    pthread_mutex_unlock(&dev->lock);
    *n_p = n;
    return first > 0 && n >= (uint64_t)first && n < (uint64_t)first + (uint64_t)count;
}

static convoy_status_t sim_record(convoy__device_t *d, convoy__event_t *event,
                                  convoy__stream_t *stream, int quiet)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    convoy__sim_stream_t *s = sim_stream(stream);
    convoy__sim_event_t *ev = sim_event(event);
    convoy_status_t st = sim_check_pair(dev, "event_record", s, ev);
    if (st != CONVOY_SUCCESS)
        return st;
    uint64_t n;
    if (sim_injected(dev, &dev->nevent_records, dev->fail_record, dev->fail_records, &n))
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: injected failure of event record %llu (sim_fail_record)", d->name,
                             (unsigned long long)n);
    return sim_event_op(dev, s, ev, CONVOY__SIM_OP_RECORD, quiet);
}

convoy_status_t convoy__sim_event_record(convoy__device_t *d, convoy__event_t *event,
                                         convoy__stream_t *stream)
{
    return sim_record(d, event, stream, 0);
}

/* As a record, counted apart: on sim a query costs the same either way, so what the
 * counters show is whether the pipeline asked a quiet event itself (device.h). */
convoy_status_t convoy__sim_event_record_quiet(convoy__device_t *d, convoy__event_t *event,
                                               convoy__stream_t *stream)
{
    return sim_record(d, event, stream, 1);
}

convoy_status_t convoy__sim_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                              convoy__event_t *event)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    convoy__sim_stream_t *s = sim_stream(stream);
    convoy__sim_event_t *ev = sim_event(event);
    convoy_status_t st = sim_check_pair(dev, "stream_wait_event", s, ev);
    if (st != CONVOY_SUCCESS)
        return st;
    uint64_t n;
    if (sim_injected(dev, &dev->nstream_waits, dev->fail_wait, dev->fail_waits, &n))
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: injected failure of stream wait %llu (sim_fail_stream_wait)",
                             d->name, (unsigned long long)n);
    return sim_event_op(dev, s, ev, CONVOY__SIM_OP_WAIT, 0);
}

/* 1 once the stream has executed the latest record and the clock has reached its
 * modelled completion, else 0; -1 (CONVOY_ERR_DEVICE) when a copy before it failed when
 * run (sim_fail_async), and for NULL (CONVOY_ERR_INVALID). Takes no lock, so the progress
 * thread may poll many events cheaply. */
int convoy__sim_event_query(convoy__device_t *d, convoy__event_t *event)
{
    convoy__sim_event_t *ev = sim_event(event);
    if (!ev)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: event_query: NULL event", d->name);
    uint64_t at = atomic_load_explicit(&ev->done_at, memory_order_acquire);
    if (at == 0)
        return 1;
    if (atomic_load_explicit(&ev->quiet, memory_order_relaxed))
        atomic_fetch_add_explicit(&sim_dev(d)->quiet_queries, 1, memory_order_relaxed);
    if (at == UINT64_MAX || convoy__now_ns() < at)
        return 0;
    if (atomic_load_explicit(&ev->failed, memory_order_relaxed) ||
        atomic_load_explicit(&sim_dev(d)->faulted, memory_order_relaxed))
        return convoy__error(d->ctx, CONVOY_ERR_DEVICE,
                             "%s: injected failure of a copy when it ran (sim_fail_async, "
                             "sim_fail_async_home)",
                             d->name);
    return 1;
}

/* ---- idle wait -------------------------------------------------------------------- */

/*
 * Sleep until an event may have completed since the previous idle_wait returned: a
 * record executed whose modelled time had passed, or the clock reached the earliest
 * modelled time of one executed but not yet complete; or until deadline_ns. Meant for
 * the device's one progress thread (completions are consumed by whoever returns).
 */
void convoy__sim_idle_wait(convoy__device_t *d, uint64_t deadline_ns)
{
    convoy__sim_dev_t *dev = sim_dev(d);
    pthread_mutex_lock(&dev->lock);
    for (;;) {
        uint64_t now = convoy__now_ns();
        heap_prune_locked(dev, now);
        if (dev->done_events != dev->idle_seen) {
            dev->idle_seen = dev->done_events;
            break;
        }
        if (now >= deadline_ns)
            break;
        uint64_t until = deadline_ns;
        if (dev->heap_len > 0 && dev->heap[0] < until)
            until = dev->heap[0];
        struct timespec ts = {
            .tv_sec = (time_t)(until / 1000000000u),
            .tv_nsec = (long)(until % 1000000000u),
        };
        dev->idle_sleeping++;
        pthread_cond_timedwait(&dev->idle_cond, &dev->lock, &ts);
        dev->idle_sleeping--;
    }
    pthread_mutex_unlock(&dev->lock);
}

/* ---- close ------------------------------------------------------------------------ */

void convoy__sim_streams_close(convoy__sim_dev_t *dev)
{
    int nstreams = 0, nevents = 0;
    pthread_mutex_lock(&dev->lock);
    while (dev->streams) {
        convoy__sim_stream_t *s = dev->streams;
        pthread_mutex_unlock(&dev->lock);
        convoy__sim_stream_destroy(&dev->base, (convoy__stream_t *)(void *)s);
        nstreams++;
        pthread_mutex_lock(&dev->lock);
    }
    /* Every queue has drained: only the owners' references are left. */
    while (dev->events) {
        convoy__sim_event_t *ev = dev->events;
        dev->events = ev->next;
        free(ev);
        nevents++;
    }
    pthread_mutex_unlock(&dev->lock);
    if (nstreams > 0 || nevents > 0)
        convoy__log_info("%s: close: destroyed %d stream(s) and %d event(s) left open",
                         dev->base.name, nstreams, nevents);
}

/*
 * The accelerator pipeline's progress thread, its streams and its events (the files of
 * the pipeline are listed in pipeline_impl.h).
 */
#include "config.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <time.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"
#include "src/bind.h"

static convoy__pipe_t *pipe_of(const convoy__device_t *dev)
{
    return dev->pipeline;
}

static convoy__pev_t *pev_record(convoy__pipe_t *p, convoy__stream_t *stream, int quiet)
{
    convoy__device_t *dev = p->dev;
    convoy__pev_t *e = p->free_pevs;
    if (e != NULL) {
        p->free_pevs = e->next;
    } else {
        e = convoy__calloc(NULL, 1, sizeof(*e), "a pipeline event");
        if (e == NULL)
            return NULL;
        if (dev->ops->event_create(dev, &e->ev) != CONVOY_SUCCESS) {
            free(e);
            return NULL;
        }
    }
    convoy_status_t st = quiet ? dev->ops->event_record_quiet(dev, e->ev, stream)
                               : dev->ops->event_record(dev, e->ev, stream);
    if (st != CONVOY_SUCCESS) {
        e->next = p->free_pevs;
        p->free_pevs = e;
        return NULL;
    }
    e->refs = 1;
    e->done = 0;
    e->failed = 0;
    e->traced = 0;
    e->quiet = quiet;
    e->implied_by = NULL;
    e->next = NULL;
    return e;
}

convoy__pev_t *convoy__pev_record(convoy__pipe_t *p, convoy__stream_t *stream)
{
    return pev_record(p, stream, 0);
}

/* Whether events recorded now may be quiet: the device records them, its errors are
 * sticky, and no trace reads their own completion times. */
static int quiet_events(const convoy__pipe_t *p)
{
    return p->dev->ops->event_record_quiet != NULL && p->dev->errors_sticky &&
           p->ctx->trace == NULL;
}

void convoy__pev_imply(convoy__pev_t *e, convoy__pev_t *later)
{
    if (e == NULL || !e->quiet || e->done || e->implied_by != NULL)
        return;
    if (later == NULL) {
        e->quiet = 0; /* nothing later proves it: it is asked itself from now on */
        return;
    }
    later->refs++;
    e->implied_by = later;
}

void convoy__pev_ask_itself(convoy__pipe_t *p, convoy__pev_t *e)
{
    if (e == NULL || !e->quiet)
        return;
    convoy__pev_put(p, e->implied_by);
    e->implied_by = NULL;
    e->quiet = 0;
}

void convoy__pev_proven(convoy__pipe_t *p, convoy__pev_t *e)
{
    if (e == NULL || e->done || !e->quiet)
        return;
    convoy__pev_ask_itself(p, e);
    e->done = 1;
}

int convoy__pev_poll_ask(convoy__pipe_t *p, convoy__pev_t *e)
{
    if (e->quiet) {
        /* Asking a quiet event would cost a call (on the H200 host a query is 1.4-1.7 us),
         * so the later event is polled. Its completion without error proves this one's;
         * its failure may be its own, so this one is then asked itself. Until its later
         * event is named (by the end of the call that recorded it: a launch, its ring's
         * start) it counts as pending: it was recorded moments ago, and on a device whose
         * errors are sticky a failure not yet seen stops whatever is enqueued after it. */
        convoy__pev_t *later = e->implied_by;
        if (later == NULL || !convoy__pev_poll(p, later))
            return 0;
        e->implied_by = NULL;
        e->quiet = 0;
        e->done = !later->failed;
        convoy__pev_put(p, later);
        if (e->done)
            return 1;
    }
    int rc;
    CONVOY__PROF_SUB(p, CONVOY__SUB_QUERY, rc = p->dev->ops->event_query(p->dev, e->ev));
    if (rc == 0)
        return 0;
    /* A failed event still means the work before it is over. Work that failed as it ran
     * (a pushout whose copies faulted) is known only here: its message is kept for the
     * failure that names it. */
    e->done = 1;
    e->failed = rc < 0;
    if (e->failed)
        snprintf(p->ev_fail_msg, sizeof(p->ev_fail_msg), "%s", convoy_last_error(NULL));
    if (e->traced && p->ctx->trace != NULL) {
        e->tr.dur_ns = convoy__now_ns() - e->tr.ts_ns;
        convoy__trace_emit(p->ctx->trace, &e->tr);
    }
    return 1;
}

void convoy__pev_put(convoy__pipe_t *p, convoy__pev_t *e)
{
    if (e == NULL || --e->refs > 0)
        return;
    convoy__pev_put(p, e->implied_by);
    e->implied_by = NULL;
    e->next = p->free_pevs;
    p->free_pevs = e;
}

convoy__pev_t *convoy__record_event(convoy__pipe_t *p, convoy__stream_t *stream)
{
    convoy__pev_t *ev = convoy__pev_record(p, stream);
    for (int i = 0; ev == NULL && i < 20; i++) {
        convoy__sleep_until_ns(convoy__now_ns() + 50000);
        ev = convoy__pev_record(p, stream);
    }
    return ev;
}

convoy__pev_t *convoy__record_event_quiet(convoy__pipe_t *p, convoy__stream_t *stream)
{
    convoy__pev_t *ev = quiet_events(p) ? pev_record(p, stream, 1) : NULL;
    return ev != NULL ? ev : convoy__record_event(p, stream);
}

convoy_status_t convoy__sync(convoy__pipe_t *p, convoy__stream_t *stream)
{
    convoy__device_t *dev = p->dev;
    char why[256];
    snprintf(why, sizeof(why), "%s", convoy_last_error(NULL));
    convoy__log_warn("%s: no event could be recorded (%s); waiting for the stream instead",
                     dev->name, why);
    if (dev->ops->stream_sync == NULL)
        return convoy__error(NULL, CONVOY_ERR_DEVICE, "%s cannot wait for a stream", dev->name);
    return dev->ops->stream_sync(dev, stream);
}

void convoy__stream_wait(convoy__pipe_t *p, convoy__stream_t *stream, convoy__pev_t *e)
{
    if (e == NULL || convoy__pev_poll(p, e))
        return;
    if (p->dev->ops->stream_wait_event(p->dev, stream, e->ev) == CONVOY_SUCCESS)
        return;
    /* The device cannot queue the wait: wait here, so that nothing runs before what it
     * needs (slow, and only when the device is out of resources). */
    convoy__log_warn("%s: a stream wait could not be queued (%s); waiting on the host",
                     p->dev->name, convoy_last_error(NULL));
    convoy__pev_ask_itself(p, e); /* not through a later event, which may be a long launch */
    while (!convoy__pev_poll(p, e))
        convoy__sleep_until_ns(convoy__now_ns() + 20000);
}

int convoy__stream_tid(convoy__pipe_t *p, convoy__stream_t *s)
{
    convoy__stream_t *all[] = {p->in, p->in_large, p->out, p->out_large};
    for (int i = 0; i < 4; i++)
        if (all[i] == s)
            return i + 1;
    for (int i = 0; i < CONVOY__NEXEC; i++) /* pushouts behind a launch */
        if (p->exec[i] == s)
            return 5 + i;
    return 0;
}

void convoy__trace_step(convoy__pipe_t *p, const char *what, uint64_t t0, int64_t ring, int count)
{
    uint64_t now = convoy__now_ns();
    convoy__trace_emit(p->ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_PROGRESS,
                                                               .pid = (int16_t)p->queue,
                                                               .tid = 0,
                                                               .count = count,
                                                               .ts_ns = t0,
                                                               .dur_ns = now - t0,
                                                               .ring_id = ring,
                                                               .name = what});
}

/* Take tasks for a new ring: deferred ones (waiting for memory) first. */
static int take_tasks(convoy__pipe_t *p, uint64_t *deadline_p)
{
    int n = 0;
    while (p->deferred != NULL && n < CONVOY__RING_CAP) {
        /* Deferred tasks were counted in load when first popped. */
        convoy__task_t *t = p->deferred;
        if (n > 0 && t->cls != p->popped[0]->cls)
            break;
        p->deferred = t->next;
        p->popped[n++] = t;
    }
    if (n > 0)
        return n;
    int64_t load = __atomic_load_n(&p->dev->load, __ATOMIC_RELAXED);
    int room = (int)CONVOY__MIN((int64_t)CONVOY__RING_CAP, p->max_inflight - load);
    n = p->ctx->sched->pop(p->ctx->sched_state, p->queue, p->popped, room, convoy__now_ns(),
                           load == 0, deadline_p);
    if (n > 0) {
        __atomic_fetch_add(&p->dev->load, n, __ATOMIC_RELAXED);
        /* A ring is of one class (ring.c): the program's tasks or convoy's own. */
        if (!convoy__task_internal(p->popped[0]))
            __atomic_fetch_sub(&p->dev->queued, n, __ATOMIC_RELAXED);
    }
    return n;
}

/* Device memory in use and ready-queue depth, sampled as each ring starts. */
static void trace_counters(convoy__pipe_t *p)
{
    uint64_t now = convoy__now_ns();
    uint64_t bytes = p->mem.bytes_in_use;
    convoy__trace_emit(p->ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_COUNTER,
                                                               .pid = (int16_t)p->queue,
                                                               .ts_ns = now,
                                                               .bytes = bytes,
                                                               .ring_id = -1,
                                                               .name = "device memory"});
    uint64_t depth = (uint64_t)p->ctx->sched->depth(p->ctx->sched_state, p->queue);
    convoy__trace_emit(p->ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_COUNTER,
                                                               .pid = (int16_t)p->queue,
                                                               .ts_ns = now,
                                                               .bytes = depth,
                                                               .ring_id = -1,
                                                               .name = "ready queue"});
}

/* progress_profile: the time since *t0 goes to part, and *t0 moves on. */
static inline void prof_mark(convoy__pipe_t *p, int part, uint64_t *t0)
{
    if (!p->profile)
        return;
    uint64_t now = convoy__now_ns();
    p->prof[part] += now - *t0;
    *t0 = now;
}

static uint64_t prof_total(const convoy__pipe_t *p)
{
    uint64_t total = 0;
    for (int i = 0; i < CONVOY__PROF_COUNT; i++)
        total += p->prof[i];
    return total;
}

/* The calling thread's CPU time, context switches (voluntary: it blocked in the kernel;
 * involuntary: it was preempted) and page faults (minor: a page first touched, or given
 * back by the allocator and touched again; in a virtual machine each can cost
 * microseconds); 0 where the system cannot say. */
static void thread_usage(convoy__thread_usage_t *u)
{
    struct timespec ts;
    *u = (convoy__thread_usage_t){0};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        u->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        u->nvcsw = ru.ru_nvcsw;
        u->nivcsw = ru.ru_nivcsw;
        u->faults = ru.ru_minflt + ru.ru_majflt;
    }
#endif
}

static void prof_reset(convoy__pipe_t *p)
{
    memset(p->prof, 0, sizeof(p->prof));
    memset(p->sub, 0, sizeof(p->sub));
    p->prof_passes = p->prof_rings = p->prof_transfer_rings = p->prof_transfers = 0;
    thread_usage(&p->prof_usage);
}

/* Append " name=Tus(S%)" to line (after prefix) and return its new length: each part with
 * its share of the period, since a slower machine (or run) makes every part slower
 * together and a change to one part shows in its share (doc/tracing.md). */
static int prof_part(char *line, size_t size, int len, const char *prefix, const char *name,
                     uint64_t ns, uint64_t total)
{
    if (len <= 0 || (size_t)len >= size)
        return len;
    return len + snprintf(line + len, size - (size_t)len, "%s %s=%.0fus(%.1f%%)", prefix, name,
                          ns / 1e3, total ? 100.0 * (double)ns / (double)total : 0.0);
}

/* Print the split of the busy period that ends now, and start the next one. */
static void prof_print(convoy__pipe_t *p)
{
    static const char *const names[CONVOY__PROF_COUNT] = {"outbound", "rings", "eager",
                                                          "pop",      "start", "idle"};
    static const char *const subs[CONVOY__SUB_COUNT] = {"query",  "reserve", "stage",   "issue",
                                                        "launch", "finish",  "complete"};
    uint64_t total = prof_total(p);
    char line[1024];
    int len =
        snprintf(line, sizeof(line),
                 "convoy: %s progress_profile: %.0f us in %llu passes, %llu rings of tasks, "
                 "%llu rings of %llu transfers (flushes, drops):",
                 p->dev->name, total / 1e3, (unsigned long long)p->prof_passes,
                 (unsigned long long)p->prof_rings, (unsigned long long)p->prof_transfer_rings,
                 (unsigned long long)p->prof_transfers);
    for (int i = 0; i < CONVOY__PROF_COUNT; i++)
        len = prof_part(line, sizeof(line), len, "", names[i], p->prof[i], total);
    for (int i = 0; i < CONVOY__SUB_COUNT; i++)
        len = prof_part(line, sizeof(line), len, i == 0 ? "; within:" : "", subs[i], p->sub[i],
                        total);
    /* CPU time well under the period's: the thread was off its core (blocked in the
     * kernel, or preempted: the context switches say which). */
    convoy__thread_usage_t u;
    thread_usage(&u);
    if (len > 0 && (size_t)len < sizeof(line))
        snprintf(line + len, sizeof(line) - (size_t)len,
                 "; thread: cpu=%.0fus blocked=%ld preempted=%ld faults=%ld",
                 (double)(u.cpu_ns - p->prof_usage.cpu_ns) / 1e3, u.nvcsw - p->prof_usage.nvcsw,
                 u.nivcsw - p->prof_usage.nivcsw, u.faults - p->prof_usage.faults);
    fprintf(stderr, "%s\n", line);
    prof_reset(p);
}

/* A ring's completions off the counters that insertions write too (one line passing
 * between threads per ring rather than per task: convoy__done_batch_t), its finished
 * members off the device's load first (a thread that a wait's end lets go sees the
 * device idle). After each ring's progress: before anything reads the load or the
 * thread sleeps, and before the next ring's launches, which may take a while. */
static void done_flush(convoy__pipe_t *p)
{
    if (p->done_load > 0) {
        __atomic_fetch_sub(&p->dev->load, p->done_load, __ATOMIC_RELAXED);
        p->done_load = 0;
    }
    convoy__done_flush(&p->done);
}

/* Pop a ring and start it, unless the last pop found nothing and nothing has changed
 * since. *deadline_p: when a ring being collected closes (UINT64_MAX: none known); seen:
 * the queue's push count read before the pop. 1 when a ring started. */
static int pop_and_start(convoy__pipe_t *p, uint64_t seen, uint64_t *deadline_p, uint64_t *t0)
{
    /* A pop that found nothing finds nothing again until a push that wakes (the
     * scheduler says which: one that fills a ring of the size this pop asked for), its
     * deadline, or a change of this device's load (the room for a ring, the idleness).
     * Neither the scheduler's lock nor a line the inserting threads write at every push
     * is taken each pass (before, a thread with moments between rings popped after every
     * push). */
    int64_t load = __atomic_load_n(&p->dev->load, __ATOMIC_RELAXED);
    int skip_pop = p->pop_empty && p->deferred == NULL && seen == p->empty_woken &&
                   load == p->empty_load && convoy__now_ns() < p->empty_until;
    if (skip_pop)
        *deadline_p = p->empty_until;
    /* Tasks waiting for memory go first, once work in flight or an eviction gives some
     * back. */
    int memory_wait = p->deferred != NULL && (p->nrings > 0 || p->outbound != NULL);
    if (load >= p->max_inflight || memory_wait || skip_pop)
        return 0;
    int n = take_tasks(p, deadline_p);
    p->pop_empty = n == 0;
    p->empty_woken = seen;
    p->empty_until = *deadline_p;
    p->empty_load = load;
    prof_mark(p, CONVOY__PROF_POP, t0);
    if (n == 0)
        return 0;
    /* Before the start: a task that fails in it may be freed at once. */
    int user = p->popped[0]->cls->internal == CONVOY__CLS_USER;
    int drops = p->popped[0]->cls->internal == CONVOY__CLS_DROP;
    p->prof_rings += user;
    p->prof_transfer_rings += !user;
    p->prof_transfers += user ? 0 : (uint64_t)n;
    convoy__ring_start(p, p->popped, n);
    /* The device went busy: its completions (a flush's too) may make CPU tasks ready.
     * After the start, so that the wake-up does not delay it. */
    if (load == 0 && !drops)
        convoy__cpu_poller_wake(p->ctx);
    if (p->ctx->trace != NULL)
        trace_counters(p);
    prof_mark(p, CONVOY__PROF_START, t0);
    return 1;
}

/* With nothing in flight, poll the queue's push count for progress_idle_us before the
 * thread sleeps: the wake-up of a sleeping thread is what a program that inserts again
 * soon would wait for (5-24 us on the H200 host, doc/results.md, 2026-12-04). It yields
 * its core at each poll: on 2 cores a poller that kept it slowed the CPU workers (300
 * rounds of a sim task and two CPU tasks of 300 us: 200-234 ms against 126-140 at 0;
 * with the yield, as at 0). 1 when a push or the deadline came, or the thread stops. */
static int idle_poll(convoy__pipe_t *p, uint64_t seen, uint64_t deadline)
{
    if (p->idle_spin_ns == 0)
        return 0;
    uint64_t end = convoy__now_ns() + p->idle_spin_ns;
    while (!atomic_load(&p->stop)) {
        if (convoy__queue_pushes(p->ctx, p->queue) != seen)
            return 1;
        uint64_t now = convoy__now_ns();
        if (now >= deadline)
            return 1;
        if (now >= end)
            return 0;
        sched_yield();
    }
    return 1;
}

static void *progress_main(void *arg)
{
    convoy__pipe_t *p = arg;
    convoy_context_t *ctx = p->ctx;
    convoy__thread_mark("an accelerator's progress thread");
    convoy__thread_name("%s", p->dev->name);
#ifdef PR_SET_TIMERSLACK
    /* Its sleeps of poll_us are short: without this the kernel may add 50 us to each. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
    if (convoy__param_int(&ctx->params, "bind")) {
        /* Within the process's binding (the launcher's); no device locality yet. */
        char what[48];
        snprintf(what, sizeof(what), "%s progress", p->dev->name);
        convoy__bind_progress_thread(ctx, NULL, what);
    }
    if (ctx->trace != NULL) {
        convoy__trace_name(ctx->trace, p->queue, -1, p->dev->name);
        convoy__trace_name(ctx->trace, p->queue, 0, "progress");
    }
    if (p->profile)
        prof_reset(p); /* on this thread: its CPU time */
    uint64_t t0 = p->profile ? convoy__now_ns() : 0;
    int traced = ctx->trace != NULL;
    while (!atomic_load(&p->stop)) {
        p->prof_passes++;
        uint64_t t_step = traced ? convoy__now_ns() : 0;
        int moved = p->outbound != NULL && convoy__outbound_poll(p);
        if (traced && moved)
            convoy__trace_step(p, "landed", t_step, -1, 0);
        prof_mark(p, CONVOY__PROF_OUTBOUND, &t0);
        for (convoy__ring_t **rp = &p->rings; *rp != NULL;) {
            convoy__ring_t *r = *rp, *next = r->next; /* r is freed once finished */
            int finished = 0;
            moved |= convoy__ring_progress(p, r, &finished);
            done_flush(p);
            if (finished) {
                *rp = next;
                p->nrings--;
            } else {
                rp = &r->next;
            }
        }
        prof_mark(p, CONVOY__PROF_RINGS, &t0);
        if (p->neager > 0) {
            t_step = traced ? convoy__now_ns() : 0;
            int neager = p->neager;
            convoy__push_eager(p);
            if (traced)
                convoy__trace_step(p, "push", t_step, -1, neager);
            moved = 1;
            prof_mark(p, CONVOY__PROF_EAGER, &t0);
        }
        uint64_t deadline = UINT64_MAX;
        uint64_t seen = convoy__queue_pushes(ctx, p->queue);
        if (pop_and_start(p, seen, &deadline, &t0)) {
            moved = 1;
            /* A ring that could leave while this one was starting starts before the rings
             * in flight are completed: on the H200 the GPU is often done with a small ring
             * by the end of its start, and its completion then held the next ring back
             * (mixed_latency's second ring, 23-29 of a round's 32 tasks, left 14-40 us
             * after the first ring's start ended, doc/results.md, 2026-12-04). One more
             * at most, so that a stream of rings does not hold completions back. */
            pop_and_start(p, convoy__queue_pushes(ctx, p->queue), &deadline, &t0);
        }
        if (moved) {
            p->idle_since = 0;
            continue;
        }
        uint64_t now = convoy__now_ns();
        if (p->nrings > 0 || p->outbound != NULL) {
            if (p->idle_since == 0)
                p->idle_since = now;
            if (p->dev->ops->idle_wait == NULL && now - p->idle_since < p->spin_ns) {
                /* Poll again at once: the next step of a task's way is microseconds off,
                 * and a sleep would add the kernel's timer slack to it. */
                convoy__cpu_relax();
                prof_mark(p, CONVOY__PROF_IDLE, &t0);
                continue;
            }
            uint64_t until = CONVOY__MIN(deadline, now + p->poll_ns);
            if (p->dev->ops->idle_wait != NULL)
                p->dev->ops->idle_wait(p->dev, until);
            else if (p->poll_ns > 0)
                convoy__sleep_until_ns(until);
        } else {
            p->idle_since = 0;
            /* Nothing in flight: a busy period ends (a phase of the program). */
            /* Periods under 1 ms would flood stderr: they count with the next one. Periods
             * of transfers alone (a free's drops) are left out. */
            if (p->profile && p->prof_rings > 0 && prof_total(p) >= 1000000)
                prof_print(p);
            else if (p->profile && p->prof_rings == 0)
                prof_reset(p);
            if (!idle_poll(p, seen, deadline)) {
                t_step = traced ? convoy__now_ns() : 0;
                convoy__queue_sleep(ctx, p->queue, seen, deadline);
                if (traced)
                    convoy__trace_step(p, "sleep", t_step, -1, 0);
            }
            t0 = p->profile ? convoy__now_ns() : 0;
            continue;
        }
        prof_mark(p, CONVOY__PROF_IDLE, &t0);
    }
    if (p->profile && p->prof_rings > 0)
        prof_print(p);
    return NULL;
}

static convoy_status_t create_streams(convoy__pipe_t *p)
{
    convoy__device_t *dev = p->dev;
    convoy__stream_t **all[] = {&p->in,      &p->in_large, &p->out,     &p->out_large,
                                &p->exec[0], &p->exec[1],  &p->exec[2], &p->exec[3]};
    static const char *const names[] = {"stage-in",  "stage-in large", "pushout",   "pushout large",
                                        "execute 0", "execute 1",      "execute 2", "execute 3"};
    _Static_assert(CONVOY__NEXEC == 4, "stream table assumes 4 execute streams");
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        convoy_status_t st = dev->ops->stream_create(dev, all[i]);
        if (st != CONVOY_SUCCESS)
            return st;
        if (p->ctx->trace != NULL)
            convoy__trace_name(p->ctx->trace, p->queue, (int)i + 1, names[i]);
    }
    return CONVOY_SUCCESS;
}

static int method_of(const char *name)
{
    if (strcmp(name, "engine") == 0)
        return CONVOY__METHOD_ENGINE;
    if (strcmp(name, "sm") == 0)
        return CONVOY__METHOD_SM;
    if (strcmp(name, "loop") == 0)
        return CONVOY__METHOD_LOOP;
    return -1;
}

const char *convoy__copy_method_name(int method)
{
    static const char *const names[] = {"loop", "engine", "sm"};
    return method >= 0 && method < CONVOY__METHOD_COUNT ? names[method] : "auto";
}

convoy_status_t convoy__pipeline_start(convoy__device_t *dev)
{
    convoy_context_t *ctx = dev->ctx;
    convoy__pipe_t *p = convoy__calloc(ctx, 1, sizeof(*p), "an accelerator pipeline");
    if (p == NULL)
        return CONVOY_ERR_NOMEM;
    p->dev = dev;
    p->ctx = ctx;
    p->queue = 1 + dev->index;
    p->max_inflight = (int)convoy__param_int(&ctx->params, "max_inflight");
    p->poll_ns = (uint64_t)(convoy__param_double(&ctx->params, "poll_us") * 1000.0);
    p->profile = (int)convoy__param_int(&ctx->params, "progress_profile");
    p->spin_ns = (uint64_t)(convoy__param_double(&ctx->params, "progress_spin_us") * 1000.0);
    p->idle_spin_ns = (uint64_t)(convoy__param_double(&ctx->params, "progress_idle_us") * 1000.0);
    p->method = method_of(convoy__param_str(&ctx->params, "copy_method"));
    /* Per device, split among its lanes (device_memory: src/component.c). */
    size_t cache = convoy__param_lane_share(&ctx->params, "device_cache");
    p->write_behind = convoy__param_lane_share(&ctx->params, "write_behind");
    p->fault_drop_rings = convoy__param_int(&ctx->params, "fault_drop_rings");
    if (ctx->host_mem != NULL && dev->component->host_mem == ctx->host_mem &&
        ctx->host_mem->device_ptr != NULL)
        p->in_place_max = (size_t)convoy__param_int(&ctx->params, "in_place_max_bytes");
    convoy__devmem_init(&p->mem, dev, CONVOY__MIN(cache, dev->mem_capacity / 4));
    dev->pipeline = p;
    if (p->method >= 0 && !(dev->methods & (1u << p->method))) {
        char have[64] = "";
        for (int m = 0; m < CONVOY__METHOD_COUNT; m++)
            if (dev->methods & (1u << m))
                snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s",
                         have[0] ? ", " : "", convoy__copy_method_name(m));
        return convoy__error(NULL, CONVOY_ERR_UNAVAILABLE,
                             "copy_method '%s' is not offered by device %s (it has: %s)",
                             convoy__copy_method_name(p->method), dev->name, have);
    }
    convoy_status_t st = create_streams(p);
    if (st != CONVOY_SUCCESS)
        return st;
    int rc = pthread_create(&p->thread, NULL, progress_main, p);
    if (rc != 0)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "could not start the progress thread of %s",
                             dev->name);
    p->started = 1;
    return CONVOY_SUCCESS;
}

void convoy__pipeline_stop(convoy__device_t *dev)
{
    convoy__pipe_t *p = pipe_of(dev);
    if (p == NULL || !p->started)
        return;
    atomic_store(&p->stop, 1);
    convoy__queue_close(p->ctx, p->queue);
    pthread_join(p->thread, NULL);
    p->started = 0;
}

void convoy__pipeline_destroy(convoy__device_t *dev)
{
    convoy__pipe_t *p = pipe_of(dev);
    if (p == NULL)
        return;
    convoy__pipeline_stop(dev);
    /* Streams first: once they are gone nothing runs, and what was kept for work that
     * might still be running (kept rings, pinned copies) can go. */
    convoy__stream_t *all[] = {p->in,      p->in_large, p->out,     p->out_large,
                               p->exec[0], p->exec[1],  p->exec[2], p->exec[3]};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i] != NULL)
            dev->ops->stream_destroy(dev, all[i]);
    while (p->kept != NULL) {
        convoy__ring_t *r = p->kept;
        p->kept = r->next;
        r->leak = 0;
        convoy__ring_free(p, r);
    }
    for (int i = 0; i < p->neager; i++) /* the loop pushed them all; only holds remain */
        convoy__eager_release(p, p->eager[i]);
    free(p->eager);
    convoy__outbound_drop(p);
    for (convoy__devcopy_t *c = p->mem.pinned; c != NULL; c = c->lru_next)
        if (c->arrival != NULL) {
            convoy__pev_put(p, c->arrival);
            c->arrival = NULL;
        }
    convoy__devmem_fini(&p->mem);
    while (p->free_pevs != NULL) {
        convoy__pev_t *e = p->free_pevs;
        p->free_pevs = e->next;
        dev->ops->event_destroy(dev, e->ev);
        free(e);
    }
    convoy__ring_spares_free(p);
    convoy__stage_free(&p->spare_stage);
    free(p);
    dev->pipeline = NULL;
}

uint64_t convoy__pipeline_drop_rings(const convoy__device_t *dev)
{
    const convoy__pipe_t *p = dev->pipeline;
    return p != NULL ? atomic_load_explicit(&p->drop_rings, memory_order_relaxed) : 0;
}

size_t convoy__pipeline_cached_bytes(const convoy__device_t *dev)
{
    const convoy__pipe_t *p = dev->pipeline;
    return p != NULL ? atomic_load_explicit(&p->mem.cache.held, memory_order_relaxed) : 0;
}

/*
 * Pushouts behind a launch (the files of the pipeline are listed in pipeline_impl.h).
 *
 * A version someone waits for at home (a convoy_wait is pending, or a successor with no
 * chore for this device reads it) went home after its task completed: the completion,
 * then a pushout, then a flush task through the scheduler for each CPU successor, one
 * step of this thread after another (mixed_latency's rounds on the H200, 2026-12-03:
 * 25-30 us from a ring's completion to its successors ready). On a device whose launch
 * runs the chore at once (launch_inline), each member's result is known when the launch
 * returns, so its pushout can go on the launch's own stream right behind the kernels: it
 * flies while the thread does other work, and the member completes with its version
 * home as well (task->home_flows), so that its CPU successors are ready at once.
 *
 * Host memory is written before the member completes, so only what cannot be lost
 * goes: a member whose chore succeeded, nothing it needed known to have failed (its
 * copies' arrivals included), pinned host memory (no bounce), a final version (no later
 * writer yet), no other pushout of the datum in flight (it could land after this one),
 * and a copy written in place: a fresh buffer means the copy here is the datum's only
 * newest version, which a flush-all could push home while this one flies. A device error not known
 * at the launch stops the stream's later work on a GPU (the context's error is sticky; sim's
 * sim_sticky_errors likewise runs nothing after a fault), so these copies never run. Where
 * errors are not sticky, the stage-in's events are not quiet and are asked here: on sim an
 * inline launch runs only once the stream's earlier work has run, so its failures are known.
 * A quiet event not yet proven polls as pending (pipeline.c) and is not asked. A pushout that
 * fails leaves the version dirty on the device, as any pushout does: the member still
 * succeeds.
 */
#include "config.h"

#include <stdlib.h>

#include "device/pipeline_impl.h"

/* The events one convoy__push_behind found still pending: each is polled once. A query
 * costs 1.4-1.7 us on the H200 host (doc/results.md, 2026-12-01), and a ring's members
 * share their stage-in's events, which are usually still pending at the launch (and
 * quiet, on a device whose errors are sticky: pending without a query). */
typedef struct pending {
    const convoy__pev_t *ev[8];
    int n;
} pending_t;

/* Is ev known, now, to have failed? */
static int known_failed(convoy__pipe_t *p, convoy__pev_t *ev, pending_t *pend)
{
    if (ev == NULL || ev->done)
        return ev != NULL && ev->failed;
    for (int i = 0; i < pend->n; i++)
        if (pend->ev[i] == ev)
            return 0;
    if (convoy__pev_poll(p, ev))
        return ev->failed;
    if (pend->n < (int)(sizeof(pend->ev) / sizeof(pend->ev[0])))
        pend->ev[pend->n++] = ev;
    return 0;
}

/* Did anything m needed fail, as far as is known now? */
static int member_known_failed(convoy__pipe_t *p, const convoy__member_t *m, pending_t *pend)
{
    for (int w = 0; w < m->nwait; w++)
        if (known_failed(p, m->wait[w], pend))
            return 1;
    for (int f = 0; f < m->ncopies; f++) /* an input that did not arrive */
        if (m->copy[f] != NULL && known_failed(p, m->copy[f]->arrival, pend))
            return 1;
    return 0;
}

/* May m's flow f go home behind the launch? (see the top of this file) */
static int goes_home(const convoy__pipe_t *p, const convoy__member_t *m, int f, int waiting)
{
    convoy__task_t *t = m->task;
    convoy_data_t *d = t->data[f];
    const convoy__devcopy_t *c = m->copy[f];
    if (!convoy__task_writes_datum(t, f) || convoy__member_same_datum(m, f) >= 0 ||
        !d->host_pinned || c->out_ev != NULL || m->fresh[f] != NULL ||
        atomic_load_explicit(&d->pushing, memory_order_acquire) > 0 ||
        (atomic_load_explicit(&d->flags, memory_order_relaxed) &
         (CONVOY_DATA_RESIDENT | CONVOY_DATA_SCRATCH | CONVOY__DATA_FREED)) ||
        atomic_load_explicit(&d->last_writer_id, memory_order_acquire) != t->id + 1)
        return 0;
    return waiting || convoy__task_needs_home(t, d, p->dev->kind);
}

int convoy__push_behind_plan(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    if (!p->dev->launch_inline || g->nrun == 0)
        return 0;
    int waiting = atomic_load_explicit(&p->ctx->waiting, memory_order_relaxed) > 0;
    /* Which flows go: m->pushed, first marked as candidates. What they needed is asked of
     * the device only for members with a flow to push: when every member of every launch
     * asked for its inputs' events, still pending at its launch, tiny_tasks' launches took
     * 8.2-10.0 ms of a 33-41 ms timed run, 2.4-4.4 since (doc/results.md, 2026-12-04). */
    int n = 0, group_failed = -1; /* -1: not asked yet */
    pending_t pend = {.n = 0};
    for (int i = 0; i < g->nrun; i++) {
        convoy__member_t *m = &r->m[g->run[i]];
        if (m->fail != MEMBER_OK || m->rc != 0)
            continue;
        for (int f = 0; f < m->ncopies; f++)
            if (goes_home(p, m, f, waiting))
                m->pushed |= (uint16_t)(1u << f);
        if (m->pushed == 0)
            continue;
        if (group_failed < 0)
            group_failed =
                known_failed(p, g->in_ev, &pend) || known_failed(p, g->in_small_ev, &pend);
        if (group_failed || member_known_failed(p, m, &pend)) {
            m->pushed = 0;
            continue;
        }
        n += __builtin_popcount(m->pushed);
    }
    return n;
}

void convoy__push_behind(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g,
                         convoy__stream_t *stream, int n)
{
    if (n == 0)
        return;
    if (g->exec_ev == NULL) {
        /* The launch was proven over by waiting for its stream: they go home the usual
         * way. */
        for (int i = 0; i < g->nrun; i++)
            r->m[g->run[i]].pushed = 0;
        return;
    }
    convoy__stage_t s;
    int *who = malloc((size_t)n * sizeof(*who)); /* by tag: member index * 32 + flow */
    g->push_evs = calloc((size_t)n, sizeof(*g->push_evs));
    if (who == NULL || g->push_evs == NULL || convoy__stage_get(p, &s, n) != 0) {
        /* Out of host memory: they go home the usual way, after completion. */
        free(who);
        free(g->push_evs);
        g->push_evs = NULL;
        for (int i = 0; i < g->nrun; i++)
            r->m[g->run[i]].pushed = 0;
        return;
    }
    int k = 0;
    for (int i = 0; i < g->nrun; i++) {
        convoy__member_t *m = &r->m[g->run[i]];
        for (int f = 0; f < m->ncopies; f++) {
            if (!((m->pushed >> f) & 1))
                continue;
            convoy_data_t *d = m->task->data[f];
            s.copies[k] = (convoy__copy_t){.dst = d->host,
                                           .src = m->copy[f]->ptr, /* written in place: goes_home */
                                           .bytes = d->bytes,
                                           .dir = CONVOY__D2H,
                                           .flags = CONVOY__COPY_HOST_PINNED,
                                           .tag = k};
            who[k++] = g->run[i] * 32 + f;
        }
    }
    s.n = k;
    convoy__stage_issue(p, r->id, &s, CONVOY__STAGE_OUT, stream, stream);
    for (int j = 0; j < s.plan.nsubs; j++)
        if (s.subs[j] != NULL) {
            s.subs[j]->refs++;
            g->push_evs[g->npush++] = s.subs[j];
        }
    for (int j = 0; j < k; j++) {
        convoy__member_t *m = &r->m[who[j] / 32];
        int f = who[j] % 32;
        if (!s.failed[j]) {
            /* On the link home as any pushout is: write-behind's window counts it. */
            g->push_bytes += m->task->data[f]->bytes;
            continue;
        }
        /* Not enqueued: it goes home the usual way. One that may still run (2: the device
         * could neither record nor wait) leaves its copy out of use for good. */
        m->pushed &= (uint16_t) ~(1u << f);
        if (s.failed[j] == 2)
            convoy__devmem_pin(&p->mem, m->copy[f], 1);
    }
    p->out_bytes += g->push_bytes;
    for (int j = 0; j < s.plan.nsubs; j++)
        convoy__pev_put(p, s.subs[j]);
    convoy__stage_put(p, &s);
    free(who);
}

int convoy__push_behind_over(convoy__pipe_t *p, convoy__group_t *g, int *failed_p)
{
    int failed = 0;
    for (int j = 0; j < g->npush; j++) {
        if (!convoy__pev_poll(p, g->push_evs[j]))
            return 0;
        failed |= g->push_evs[j]->failed;
    }
    *failed_p = failed;
    convoy__push_behind_uncount(p, g);
    return 1;
}

void convoy__push_behind_uncount(convoy__pipe_t *p, convoy__group_t *g)
{
    p->out_bytes -= g->push_bytes;
    g->push_bytes = 0;
}

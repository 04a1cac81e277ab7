/*
 * One stage's copies: planned by the scheduler, issued as bounded submissions, each with
 * an event (DESIGN.md, "memcpy_multi: the contract").
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"

void convoy__stage_free(convoy__stage_t *s)
{
    free(s->copies);
    free(s->plan.subs);
    free(s->sub_of);
    free(s->failed);
    free(s->subs);
    memset(s, 0, sizeof(*s));
}

int convoy__stage_alloc(convoy__stage_t *s, int cap)
{
    memset(s, 0, sizeof(*s));
    size_t c = (size_t)(cap > 0 ? cap : 1);
    s->copies = malloc(c * sizeof(*s->copies));
    s->plan.subs = malloc(c * sizeof(*s->plan.subs));
    s->sub_of = malloc(c * sizeof(int));
    s->failed = calloc(c, 1);
    s->subs = calloc(c, sizeof(*s->subs));
    if (!s->copies || !s->plan.subs || !s->sub_of || !s->failed || !s->subs) {
        convoy__stage_free(s);
        return -1;
    }
    return 0;
}

/* Count one submission's copies by direction. */
static void count(convoy_context_t *ctx, int stage_kind, const convoy__submission_t *sub,
                  const convoy__copy_t *cp)
{
    convoy__stats_atomic_t *st = &ctx->stats;
    int in = stage_kind == CONVOY__STAGE_IN;
    atomic_fetch_add_explicit(in ? &st->h2d_submissions : &st->d2h_submissions, 1,
                              memory_order_relaxed);
    if (stage_kind == CONVOY__STAGE_EVICT) {
        atomic_fetch_add_explicit(&st->eviction_submissions, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&st->eviction_copies, (uint64_t)sub->count, memory_order_relaxed);
    } else if (!in) {
        atomic_fetch_add_explicit(&st->flush_copies, (uint64_t)sub->count, memory_order_relaxed);
    }
    /* Summed here, one atomic per direction and submission: the counters are shared. */
    uint64_t n[3] = {0, 0, 0}, b[3] = {0, 0, 0};
    for (int j = 0; j < sub->count; j++) {
        n[cp[j].dir]++;
        b[cp[j].dir] += cp[j].bytes;
    }
    _Atomic uint64_t *cn[3] = {&st->h2d_copies, &st->d2h_copies, &st->d2d_copies};
    _Atomic uint64_t *cb[3] = {&st->h2d_bytes, &st->d2h_bytes, &st->d2d_bytes};
    for (int d = 0; d < 3; d++)
        if (n[d] > 0) {
            atomic_fetch_add_explicit(cn[d], n[d], memory_order_relaxed);
            atomic_fetch_add_explicit(cb[d], b[d], memory_order_relaxed);
        }
    if (sub->split)
        atomic_fetch_add_explicit(&st->split_copies, 1, memory_order_relaxed);
}

/*
 * Plan and issue a stage's copies. A failed submission is retried one copy at a time
 * from the first copy it did not enqueue; copies that fail alone are marked failed (1).
 * Every submission gets an event; when none can be recorded, the stream is synchronised
 * instead, so that the copies are known to have landed (no event: s->subs[k] NULL, which
 * everything reads as done) or to have failed. Only when even that fails are they marked
 * 2: they may still run, and the caller keeps their device memory out of use for good.
 */
void convoy__stage_issue(convoy__pipe_t *p, int64_t ring_id, convoy__stage_t *s, int stage_kind,
                         convoy__stream_t *small, convoy__stream_t *large)
{
    convoy__device_t *dev = p->dev;
    convoy_context_t *ctx = p->ctx;
    ctx->sched->plan(ctx->sched_state, dev, s->copies, s->n, &s->plan);
    for (int k = 0; k < s->plan.nsubs; k++) {
        const convoy__submission_t *sub = &s->plan.subs[k];
        const convoy__copy_t *cp = s->copies + sub->first;
        convoy__stream_t *stream = sub->split ? large : small;
        int submitted = 0, method = CONVOY__METHOD_LOOP;
        convoy_status_t rc = sub->count == 1
                                 ? dev->ops->memcpy(dev, stream, cp)
                                 : dev->ops->memcpy_multi(dev, stream, cp, sub->count, p->method,
                                                          &submitted, &method);
        if (rc != CONVOY_SUCCESS) {
            if (s->msg[0] == '\0')
                snprintf(s->msg, sizeof(s->msg), "%s", convoy_last_error(NULL));
            if (sub->count == 1) {
                s->failed[cp->tag] = 1;
            } else {
                convoy__log_info("%s: submission of %d copies failed after %d; retrying one "
                                 "copy at a time",
                                 dev->name, sub->count, submitted);
                for (int j = submitted; j < sub->count; j++) {
                    atomic_fetch_add_explicit(&ctx->stats.retried_copies, 1, memory_order_relaxed);
                    if (dev->ops->memcpy(dev, stream, &cp[j]) != CONVOY_SUCCESS)
                        s->failed[cp[j].tag] = 1;
                }
            }
        }
        convoy__pev_t *ev = convoy__record_event(p, stream);
        if (ev == NULL && convoy__sync(p, stream) != CONVOY_SUCCESS) {
            if (s->msg[0] == '\0')
                snprintf(s->msg, sizeof(s->msg), "%s", convoy_last_error(NULL));
            convoy__log_error("%s: the copies of a submission cannot be proven over (%s)",
                              dev->name, convoy_last_error(NULL));
            for (int j = 0; j < sub->count; j++)
                s->failed[cp[j].tag] = 2;
        }
        s->subs[k] = ev;
        for (int j = 0; j < sub->count; j++)
            s->sub_of[cp[j].tag] = k;
        count(ctx, stage_kind, sub, cp);
        if (ev != NULL && ctx->trace != NULL) {
            ev->traced = 1;
            ev->tr = (convoy__trace_event_t){
                .kind = CONVOY__EV_SUBMISSION,
                .stage = (uint8_t)stage_kind,
                .method = (int8_t)(sub->count == 1 ? CONVOY__METHOD_LOOP : method),
                .split = (uint8_t)sub->split,
                .pid = (int16_t)p->queue,
                .tid = (int16_t)convoy__stream_tid(p, stream),
                .count = sub->count,
                .ts_ns = ev->enqueue_ns,
                .bytes = sub->bytes,
                .ring_id = ring_id};
        }
    }
}

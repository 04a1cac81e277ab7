/*
 * One stage's copies: planned by the scheduler, issued as bounded submissions, each with
 * an event (DESIGN.md, "memcpy_multi: the contract").
 *
 * The pinned bounce (doc/cuda.md, "Pageable host memory"): the pageable host sides of a
 * submission (memory not from convoy_host_alloc) move into one pinned block from
 * convoy_host_alloc, so that the submission takes the device's fast pinned path (the SM
 * kernel, or one batched call) instead of one copy call per flow. Stage-in copies the
 * program's bytes into the block on the progress thread before the submission; the block
 * is freed once the submission's event says the device has read it. Pushouts land in the
 * block; the bytes go to the program's memory when the submission is seen landed
 * (pushout.c, landed), before coherence learns it, and never when it failed: the host
 * copy stays untouched and the device copy the newest version.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"
#include "src/bind.h"

void convoy__stage_free(convoy__stage_t *s)
{
    free(s->copies);
    free(s->plan.subs);
    free(s->sub_of);
    free(s->failed);
    free(s->subs);
    free(s->bounce);
    free(s->bounced);
    memset(s, 0, sizeof(*s));
}

int convoy__stage_get(convoy__pipe_t *p, convoy__stage_t *s, int cap)
{
    cap = CONVOY__MAX(cap, 1);
    if (p->spare_stage.cap >= cap) {
        *s = p->spare_stage;
        p->spare_stage = (convoy__stage_t){0};
        s->n = 0;
        s->plan.nsubs = 0;
        s->msg[0] = '\0';
        return 0;
    }
    memset(s, 0, sizeof(*s));
    size_t c = (size_t)cap;
    s->copies = malloc(c * sizeof(*s->copies));
    s->plan.subs = malloc(c * sizeof(*s->plan.subs));
    s->sub_of = malloc(c * sizeof(int));
    s->failed = malloc(c);
    s->subs = malloc(c * sizeof(*s->subs));
    s->bounce = malloc(c * sizeof(*s->bounce));
    s->bounced = malloc(c * sizeof(*s->bounced));
    if (!s->copies || !s->plan.subs || !s->sub_of || !s->failed || !s->subs || !s->bounce ||
        !s->bounced) {
        convoy__stage_free(s);
        return -1;
    }
    s->cap = cap;
    return 0;
}

void convoy__stage_put(convoy__pipe_t *p, convoy__stage_t *s)
{
    /* Kept up to a full ring's stage-in: a flush of a million dirty copies is not. */
    if (s->subs != NULL && s->cap > p->spare_stage.cap &&
        s->cap <= CONVOY__RING_CAP * CONVOY_MAX_FLOWS) {
        convoy__stage_free(&p->spare_stage);
        p->spare_stage = *s;
        memset(s, 0, sizeof(*s));
        return;
    }
    convoy__stage_free(s);
}

/* ---- the pinned bounce ------------------------------------------------------------ */

enum { BOUNCE_OFF = 0, BOUNCE_ON, BOUNCE_AUTO };

#define BOUNCE_ALIGN 64           /* each copy's place in a block starts on a cache line */
#define BOUNCE_AUTO_THREADS_MAX 7 /* 8 copiers: 45 GB/s on the H200 host (bench/host_costs) */

int convoy__bounce_auto_threads(int cores, int naccel)
{
    int n = cores / (2 * CONVOY__MAX(naccel, 1)) - 1;
    return CONVOY__MAX(0, CONVOY__MIN(n, BOUNCE_AUTO_THREADS_MAX));
}

static int process_cores(convoy_context_t *ctx)
{
    hwloc_bitmap_t set = convoy__bind_process_set(ctx->topology);
    int cores = set != NULL ? convoy__bind_core_count(ctx->topology, set) : 1;
    hwloc_bitmap_free(set);
    return cores;
}

static void bounce_setup(convoy__pipe_t *p)
{
    const char *mode = convoy__param_str(&p->ctx->params, "pageable_bounce");
    p->bounce_mode = strcmp(mode, "on") == 0    ? BOUNCE_ON
                     : strcmp(mode, "off") == 0 ? BOUNCE_OFF
                                                : BOUNCE_AUTO;
    p->bounce_max = (size_t)convoy__param_int(&p->ctx->params, "pageable_bounce_max");
    p->bounce_limit = convoy__param_lane_share(&p->ctx->params, "pageable_bounce_limit");
    /* Without pinned memory a bounce is only one more copy: auto leaves it off. */
    if (p->bounce_mode == BOUNCE_AUTO && p->ctx->host_mem == NULL)
        p->bounce_mode = BOUNCE_OFF;
    p->bounce_ready = 1;
    int threads = (int)convoy__param_int(&p->ctx->params, "pageable_bounce_threads");
    if (threads < 0)
        threads = convoy__bounce_auto_threads(process_cores(p->ctx), p->ctx->naccel);
    /* Helpers poll between jobs as long as an idle CPU worker polls for tasks, and after a
     * ring's start as long as the polling worker does while an accelerator is busy. */
    uint64_t spin_ns = (uint64_t)(convoy__param_double(&p->ctx->params, "spin_us") * 1000.0);
    p->gang_prime_ns = (uint64_t)(convoy__param_double(&p->ctx->params, "spin_busy_us") * 1000.0);
    if (p->bounce_mode != BOUNCE_OFF && threads > 0)
        p->gang = convoy__gang_new(threads, spin_ns, p->dev->name);
    convoy__log_debug("%s: pageable bounce %s (copies up to %zu bytes, %zu bytes at once, %d "
                      "memcpy helpers)",
                      p->dev->name, mode, p->bounce_max, p->bounce_limit,
                      p->gang != NULL ? threads : 0);
}

void convoy__bounce_put(convoy__pipe_t *p, convoy__bounce_t *b, int leak)
{
    if (b == NULL)
        return;
    if (leak) {
        convoy__log_warn("%s: a pinned bounce block of %zu bytes may still be used by copies "
                         "that cannot be proven over; kept until the device closes",
                         p->dev->name, b->bytes);
        convoy__pev_put(p, b->ev);
        b->ev = NULL;
        b->leak = 1;
        b->next = p->bounces;
        p->bounces = b;
        return;
    }
    convoy__pev_put(p, b->ev);
    convoy_host_free(p->ctx, b->block);
    p->bounce_bytes -= b->bytes;
    free(b);
}

/* Free the stage-in blocks whose submissions are over. */
static void bounce_reap(convoy__pipe_t *p)
{
    for (convoy__bounce_t **bp = &p->bounces; *bp != NULL;) {
        convoy__bounce_t *b = *bp;
        if (b->leak || !convoy__pev_poll(p, b->ev)) {
            bp = &b->next;
            continue;
        }
        *bp = b->next;
        convoy__bounce_put(p, b, 0);
    }
}

void convoy__bounce_drop(convoy__pipe_t *p)
{
    while (p->bounces != NULL) {
        convoy__bounce_t *b = p->bounces;
        p->bounces = b->next;
        convoy__bounce_put(p, b, 0);
    }
    convoy__gang_free(p->gang);
    p->gang = NULL;
    free(p->spans);
    p->spans = NULL;
    p->spans_cap = 0;
}

void convoy__bounce_expect(convoy__pipe_t *p)
{
    if (p->bounced && p->gang != NULL)
        convoy__gang_prime(p->gang, p->gang_prime_ns);
    p->bounced = 0;
}

int convoy__bounce_spans(convoy__pipe_t *p, int n)
{
    if (n <= p->spans_cap)
        return 0;
    int cap = p->spans_cap ? p->spans_cap : 512;
    while (cap < n)
        cap *= 2;
    convoy__span_t *s = realloc(p->spans, (size_t)cap * sizeof(*s));
    if (s == NULL)
        return -1;
    p->spans = s;
    p->spans_cap = cap;
    return 0;
}

static size_t bounce_round(size_t bytes)
{
    return (bytes + BOUNCE_ALIGN - 1) & ~(size_t)(BOUNCE_ALIGN - 1);
}

/* Whether c goes through the bounce in a stage of stage_kind: a host side that is not
 * pinned, in the stage's direction, and (auto) no larger than pageable_bounce_max. */
static int bounce_eligible(const convoy__pipe_t *p, const convoy__copy_t *c, int stage_kind)
{
    int dir = stage_kind == CONVOY__STAGE_IN ? CONVOY__H2D : CONVOY__D2H;
    return c->dir == dir && !(c->flags & CONVOY__COPY_HOST_PINNED) &&
           (p->bounce_mode == BOUNCE_ON || c->bytes <= p->bounce_max);
}

/*
 * Move the eligible host sides of submission k into one block: stage-in copies the
 * program's bytes there now and reads from it; pushouts land in it (s->bounced by tag).
 * The block, or NULL when nothing is eligible, the block would pass pageable_bounce_limit,
 * or no memory is left: the copies then go straight, as without the bounce.
 */
static convoy__bounce_t *bounce_sub(convoy__pipe_t *p, convoy__stage_t *s, int k, int stage_kind)
{
    const convoy__submission_t *sub = &s->plan.subs[k];
    convoy__copy_t *cp = s->copies + sub->first;
    size_t total = 0;
    for (int j = 0; j < sub->count; j++)
        if (bounce_eligible(p, &cp[j], stage_kind))
            total += bounce_round(cp[j].bytes);
    if (total == 0)
        return NULL;
    if (p->bounce_bytes + total > p->bounce_limit) {
        bounce_reap(p);
        if (p->bounce_bytes + total > p->bounce_limit)
            return NULL;
    }
    convoy__bounce_t *b = convoy__bounce_spans(p, sub->count) == 0 ? malloc(sizeof(*b)) : NULL;
    void *block = b != NULL ? convoy_host_alloc(p->ctx, total) : NULL;
    if (block == NULL) {
        convoy__log_debug("%s: no pinned bounce block of %zu bytes (%s); copying straight",
                          p->dev->name, total, b != NULL ? convoy_last_error(NULL) : "no memory");
        free(b);
        return NULL;
    }
    *b = (convoy__bounce_t){.block = block, .bytes = total};
    p->bounce_bytes += total;
    uint8_t pinned = convoy__host_is_pinned(p->ctx, block, total) ? CONVOY__COPY_HOST_PINNED : 0;
    char *at = block;
    int nspans = 0;
    for (int j = 0; j < sub->count; j++) {
        convoy__copy_t *c = &cp[j];
        if (!bounce_eligible(p, c, stage_kind))
            continue;
        if (stage_kind == CONVOY__STAGE_IN) {
            p->spans[nspans++] = (convoy__span_t){.dst = at, .src = c->src, .bytes = c->bytes};
            c->src = at;
        } else {
            s->bounced[c->tag] = at;
            c->dst = at;
        }
        c->flags |= pinned;
        at += bounce_round(c->bytes);
    }
    p->bounced |= convoy__gang_copy(p->gang, p->spans, nspans, CONVOY__BOUNCE_GANG_MIN);
    return b;
}

/* After submission k was issued: a stage-in block is held until its event says the
 * device has read it; a pushout's goes to the caller (s->bounce). */
static void bounce_issued(convoy__pipe_t *p, convoy__stage_t *s, int k, int stage_kind,
                          convoy__bounce_t *b)
{
    if (b == NULL)
        return;
    if (stage_kind != CONVOY__STAGE_IN) {
        s->bounce[k] = b;
        return;
    }
    const convoy__submission_t *sub = &s->plan.subs[k];
    int unknown = 0;
    for (int j = 0; j < sub->count; j++)
        unknown |= s->failed[s->copies[sub->first + j].tag] == 2;
    if (unknown || s->subs[k] == NULL) { /* may still run, or over (synchronised, failed) */
        convoy__bounce_put(p, b, unknown);
        return;
    }
    b->ev = s->subs[k];
    b->ev->refs++;
    b->next = p->bounces;
    p->bounces = b;
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
    } else if (stage_kind == CONVOY__STAGE_BEHIND) {
        atomic_fetch_add_explicit(&st->write_behind_copies, (uint64_t)sub->count,
                                  memory_order_relaxed);
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
 * A stage-in's small submissions are recorded quiet where the device allows, but for
 * those with a bounce block: the ring's start names the later events that prove them
 * (ring.c, imply_stage_in).
 */
void convoy__stage_issue(convoy__pipe_t *p, int64_t ring_id, convoy__stage_t *s, int stage_kind,
                         convoy__stream_t *small, convoy__stream_t *large)
{
    convoy__device_t *dev = p->dev;
    convoy_context_t *ctx = p->ctx;
    int traced_kind = stage_kind == CONVOY__STAGE_BEHIND ? CONVOY__STAGE_OUT : stage_kind;
    ctx->sched->plan(ctx->sched_state, dev, s->copies, s->n, &s->plan);
    /* Only what this stage has is cleared (its arrays are reused: convoy__stage_get). */
    memset(s->failed, 0, (size_t)s->n);
    memset(s->bounced, 0, (size_t)s->n * sizeof(*s->bounced));
    memset(s->subs, 0, (size_t)s->plan.nsubs * sizeof(*s->subs));
    memset(s->bounce, 0, (size_t)s->plan.nsubs * sizeof(*s->bounce));
    if (!p->bounce_ready)
        bounce_setup(p);
    if (p->bounces != NULL)
        bounce_reap(p);
    for (int k = 0; k < s->plan.nsubs; k++) {
        const convoy__submission_t *sub = &s->plan.subs[k];
        convoy__bounce_t *bounce =
            p->bounce_mode != BOUNCE_OFF ? bounce_sub(p, s, k, stage_kind) : NULL;
        const convoy__copy_t *cp = s->copies + sub->first;
        convoy__stream_t *stream = sub->split ? large : small;
        int submitted = 0, method = CONVOY__METHOD_LOOP;
        /* Its slice starts as its copies are submitted: the device may start them before
         * the call returns, and a loaded host may record its event much later. */
        uint64_t t_submit = ctx->trace != NULL ? convoy__now_ns() : 0;
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
        /* Not a bounced one: its block is reaped on its own event, which a quiet one's
         * later event (the ring's launch) could hold back for as long as a chore runs. */
        convoy__pev_t *ev = stage_kind == CONVOY__STAGE_IN && !sub->split && bounce == NULL
                                ? convoy__record_event_quiet(p, stream)
                                : convoy__record_event(p, stream);
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
        bounce_issued(p, s, k, stage_kind, bounce);
        count(ctx, stage_kind, sub, cp);
        if (ev != NULL && ctx->trace != NULL) {
            ev->traced = 1;
            ev->tr = (convoy__trace_event_t){
                .kind = CONVOY__EV_SUBMISSION,
                .stage = (uint8_t)traced_kind,
                .method = (int8_t)(sub->count == 1 ? CONVOY__METHOD_LOOP : method),
                .split = (uint8_t)sub->split,
                .pid = (int16_t)p->queue,
                .tid = (int16_t)convoy__stream_tid(p, stream),
                .count = sub->count,
                .ts_ns = t_submit,
                .bytes = sub->bytes,
                .ring_id = ring_id};
        }
    }
}

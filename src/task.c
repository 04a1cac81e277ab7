/*
 * Tasks: readiness (placement and rule R), completion and its callbacks. Insertion and
 * dependency inference are in src/insert.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/coherence.h"
#include "src/core.h"
#include "src/task_impl.h"

const char *convoy__task_name(const convoy__task_t *t, char *buf, size_t len)
{
    if (convoy__task_internal(t) && t->cls->nflows > 0)
        snprintf(buf, len, "%s of datum %llu (%zu bytes)", t->cls->name,
                 (unsigned long long)t->data[0]->id, t->data[0]->bytes);
    else if (convoy__task_internal(t))
        snprintf(buf, len, "%s", t->cls->name);
    else
        snprintf(buf, len, "task %llu (class '%s')", (unsigned long long)t->id, t->cls->name);
    return buf;
}

void convoy__task_set_running(convoy__task_t *t)
{
    __atomic_store_n(&t->state, CONVOY__TASK_RUNNING, __ATOMIC_RELEASE);
}

void convoy__task_unref(convoy__task_t *t)
{
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (t->succ != t->succ_inline)
        free(t->succ);
    if (t->args != t->inline_args)
        free(t->args);
    free(t->fetch_msg);
    convoy__pool_put(t->pool, t);
}

convoy__task_t *convoy__task_record_new(convoy_context_t *ctx, int nflows)
{
    convoy__pool_t *pool = &ctx->task_pools[(CONVOY__TASK_SIZE(nflows) - 1) / CONVOY__LINE];
    convoy__task_t *t = convoy__pool_get(pool);
    if (t != NULL) {
        memset(t, 0, sizeof(*t));
        t->pool = pool;
    }
    return t;
}

void convoy__task_release(convoy_context_t *ctx, convoy__task_t *t)
{
    if (atomic_fetch_sub_explicit(&t->pending, 1, memory_order_acq_rel) == 1)
        convoy__task_make_ready(ctx, t);
}

static void record_failure(convoy_context_t *ctx, convoy__task_t *t, int outcome, const char *msg)
{
    char name[160];
    pthread_mutex_lock(&ctx->error_lock);
    if (convoy__task_internal(t)) {
        /* Not a task of the program's: what needed it fails (a flush's successors) or
         * reports it (convoy_wait, acquire, data_free). */
        if (outcome == CONVOY__FAILED && ctx->transfer_failure[0] == '\0')
            snprintf(ctx->transfer_failure, sizeof(ctx->transfer_failure), "%s",
                     msg ? msg : "no reason given");
    } else if (outcome == CONVOY__FAILED) {
        if (ctx->failures_since_wait++ == 0)
            snprintf(ctx->first_failure, sizeof(ctx->first_failure), "%s failed: %s",
                     convoy__task_name(t, name, sizeof(name)), msg ? msg : "no reason given");
    } else {
        ctx->cancels_since_wait++;
    }
    t->fail_epoch = ctx->fail_epoch;
    pthread_mutex_unlock(&ctx->error_lock);
    /* One line for a burst of failures (a failed ring), with the count. */
    if (outcome == CONVOY__FAILED)
        convoy__log_repeat(ctx, "task failed", CONVOY__LOG_WARN, "%s failed: %s",
                           convoy__task_name(t, name, sizeof(name)),
                           msg ? msg : "no reason given");
}

/* Commit or discard the task's writes: a datum written through two flows changes
 * version once. */
static void settle_writes(convoy__task_t *t, int outcome)
{
    const convoy_class_t *cls = t->cls;
    int place = t->queue == 0 ? CONVOY__COH_HOST : t->queue - 1;
    for (int i = 0; i < cls->nflows; i++) {
        if (!(cls->modes[i] & CONVOY_WRITE))
            continue;
        convoy_data_t *d = t->data[i];
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = t->data[j] == d && (cls->modes[j] & CONVOY_WRITE);
        if (seen)
            continue;
        if (outcome == CONVOY__OK) {
            convoy__coh_commit(d, place);
            /* Home too before a successor looks: a CPU reader then needs no flush. */
            int home = 0; /* the pipeline marks the first flow naming d */
            for (int j = 0; j <= i && t->home_flows != 0; j++)
                home |= t->data[j] == d && ((t->home_flows >> j) & 1);
            uint64_t v;
            if (home && convoy__coh_landed_home(d, v = convoy__coh_version(d), place))
                convoy__coh_note_host(d, v);
        } else if (outcome == CONVOY__FAILED) {
            convoy__coh_write_failed(d);
        }
    }
}

static void count_outcome(convoy_context_t *ctx, const convoy__task_t *t, int outcome,
                          convoy__done_batch_t *b)
{
    if (convoy__task_internal(t)) {
        int transfer = t->cls->internal == CONVOY__CLS_FLUSH ||
                       t->cls->internal == CONVOY__CLS_FLUSH_ALL;
        if (outcome == CONVOY__FAILED && transfer)
            atomic_fetch_add(&ctx->stats.transfers_failed, 1);
        return;
    }
    switch (outcome) {
    case CONVOY__OK:
        if (b != NULL)
            b->completed++;
        else
            atomic_fetch_add_explicit(&ctx->stats.tasks_completed, 1, memory_order_relaxed);
        break;
    case CONVOY__FAILED: atomic_fetch_add(&ctx->stats.tasks_failed, 1); break;
    default: atomic_fetch_add(&ctx->stats.tasks_cancelled, 1); break;
    }
}

/* The program's completion callback, on this thread, marked as convoy's (it must not
 * wait) when it is a program's thread completing a task cancelled at insertion. */
static void call_done(const convoy__task_t *t, int outcome, const char *msg)
{
    const char *role = convoy__thread_role();
    if (role == NULL)
        convoy__thread_mark("a completion callback");
    convoy_context_t *held = convoy__queue_hold_pause();
    if (outcome == CONVOY__OK)
        t->done(t->done_arg, t->id, CONVOY_SUCCESS, NULL);
    else if (outcome == CONVOY__FAILED)
        t->done(t->done_arg, t->id, CONVOY_ERR_TASK_FAILED, msg ? msg : "no reason given");
    else
        t->done(t->done_arg, t->id, CONVOY_ERR_TASK_FAILED,
                "cancelled: a task it depends on failed or was cancelled");
    convoy__queue_hold_resume(held);
    convoy__thread_mark(role);
}

/* Wake whatever sleeps on done_cond: task waits, a wait's cut, convoy_wait. */
static void wake_done(convoy_context_t *ctx)
{
    pthread_mutex_lock(&ctx->done_lock);
    pthread_cond_broadcast(&ctx->done_cond);
    pthread_mutex_unlock(&ctx->done_lock);
}

/* Record the events b keeps (see core.h): their tasks were counted in b, so b->ctx is
 * set. */
static void traced_flush(convoy__done_batch_t *b)
{
    convoy__trace_emit_tasks(b->ctx->trace, &b->traced, b->traced_ids, b->ntraced);
    b->ntraced = 0;
}

/* Count t done in b, whose first flush takes it off the shared counters. */
static void batch_add(convoy_context_t *ctx, convoy__done_batch_t *b, const convoy__task_t *t)
{
    int slot = (int)(t->gen % CONVOY__WAIT_GENS), k = 0;
    int internal = convoy__task_internal(t);
    while (!internal && k < b->nslots && b->slot[k] != slot)
        k++;
    if (!internal && k == CONVOY__DONE_BATCH_SLOTS) {
        convoy__done_flush(b);
        k = 0;
    }
    b->ctx = ctx;
    b->inflight++;
    if (internal)
        return;
    if (k == b->nslots) {
        b->slot[k] = slot;
        b->count[k] = 0;
        b->nslots++;
    }
    b->count[k]++;
}

void convoy__done_flush(convoy__done_batch_t *b)
{
    if (b->ntraced > 0) /* before the counts: a wait they end finds the events recorded */
        traced_flush(b);
    if (b->inflight == 0)
        return;
    convoy_context_t *ctx = b->ctx;
    if (b->completed > 0)
        atomic_fetch_add_explicit(&ctx->stats.tasks_completed, b->completed, memory_order_relaxed);
    /* The order of one task's completion: its slot, the task waits, then inflight. */
    int wake = 0;
    for (int k = 0; k < b->nslots; k++)
        wake |= atomic_fetch_sub(&ctx->gen_count[b->slot[k]], b->count[k]) == b->count[k] &&
                atomic_load(&ctx->cut_waiters) > 0;
    wake |= atomic_load(&ctx->done_waiters) > 0;
    wake |= atomic_fetch_sub(&ctx->inflight, b->inflight) == b->inflight;
    if (wake)
        wake_done(ctx);
    b->inflight = b->completed = 0;
    b->nslots = 0;
}

/* The time a task's own completion is traced at: b's stamp when it has one (see core.h).
 * Not for the tasks its failure cancels: a program's callback may have inserted them
 * since the stamp was read. */
static uint64_t done_stamp(convoy__done_batch_t *b)
{
    if (b == NULL || b->stamp_ns == 0)
        return convoy__now_ns();
    if (b->stamp_uses++ == CONVOY__DONE_STAMP_USES) {
        b->stamp_ns = convoy__now_ns();
        b->stamp_uses = 1;
    }
    return b->stamp_ns;
}

/* Does b keep events like t's (stage, stamp, ring, class), with room for one more? */
static int kept_alike(const convoy__done_batch_t *b, const convoy__task_t *t, uint8_t stage,
                      uint64_t ts_ns)
{
    return b->ntraced < CONVOY__DONE_STAMP_USES && b->traced.stage == stage &&
           b->traced.ts_ns == ts_ns && b->traced.ring_id == t->ring_id &&
           b->traced.name == t->cls->name;
}

/* t's outcome, for the trace: kept in b with the events like it, or recorded now. */
static void trace_outcome(convoy__trace_t *trace, const convoy__task_t *t, int outcome,
                          convoy__done_batch_t *b, uint64_t ts_ns)
{
    static const uint8_t step[] = {CONVOY__STEP_COMPLETED, CONVOY__STEP_FAILED,
                                   CONVOY__STEP_CANCELLED};
    if (b != NULL && b->ntraced > 0) {
        if (kept_alike(b, t, step[outcome], ts_ns)) {
            b->traced_ids[b->ntraced++] = t->id;
            return;
        }
        traced_flush(b);
    }
    const convoy__trace_event_t ev = {.kind = CONVOY__EV_TASK,
                                      .stage = step[outcome],
                                      .ts_ns = ts_ns,
                                      .task_id = t->id,
                                      .ring_id = t->ring_id,
                                      .name = t->cls->name};
    if (b == NULL) {
        convoy__trace_emit(trace, &ev);
        return;
    }
    b->traced = ev;
    b->traced_ids[0] = t->id;
    b->ntraced = 1;
}

/* Complete one task; successors that become ready are pushed, and those that must be
 * cancelled are returned through *cancel_list (linked by ->next) for the caller's loop,
 * so a long chain of cancellations does not recurse. With b, the counters every
 * insertion writes too are left to b's flush. */
static void complete_one(convoy_context_t *ctx, convoy__task_t *t, int outcome, const char *msg,
                         convoy__task_t **cancel_list, convoy__done_batch_t *b, uint64_t ts_ns)
{
    const convoy_class_t *cls = t->cls;
    settle_writes(t, outcome);
    if (outcome != CONVOY__OK)
        record_failure(ctx, t, outcome, msg);
    count_outcome(ctx, t, outcome, b);
    if (ctx->trace != NULL && !convoy__task_internal(t))
        trace_outcome(ctx->trace, t, outcome, b, ts_ns ? ts_ns : convoy__now_ns());

    task_lock(t);
    t->outcome = (uint8_t)outcome;
    /* Sequentially consistent, as the waiters' loads: with a release store a completer
     * could read done_waiters as 0 while a waiter still read the old state. */
    __atomic_store_n(&t->state, CONVOY__TASK_DONE, __ATOMIC_SEQ_CST);
    int nsucc = t->nsucc;
    task_unlock(t);
    /* After DONE no edge is added, so the list is stable and ours to read. */
    for (int i = 0; i < nsucc; i++) {
        convoy__task_t *s = t->succ[i];
        if (ctx->trace != NULL && convoy__trace_flows(ctx->trace) && !convoy__task_internal(t) &&
            !convoy__task_internal(s))
            convoy__trace_emit(ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_FLOW,
                                                                    .ts_ns = convoy__now_ns(),
                                                                    .task_id = t->id,
                                                                    .other_id = s->id,
                                                                    .ring_id = -1});
        if (outcome == CONVOY__FAILED && cls->internal == CONVOY__CLS_FLUSH &&
            s->fetch_msg == NULL)
            s->fetch_msg = strdup(msg != NULL ? msg : "a flush of its data failed");
        if (outcome != CONVOY__OK)
            atomic_store(&s->cancel, 1);
        if (atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) == 1) {
            if (atomic_load(&s->cancel)) {
                s->next = *cancel_list;
                *cancel_list = s;
            } else {
                convoy__task_make_ready(ctx, s);
            }
        }
    }
    if (t->done != NULL) {
        call_done(t, outcome, msg);
        if (b != NULL) /* it may have taken long: the next completion's stamp is read anew */
            b->stamp_uses = CONVOY__DONE_STAMP_USES;
    }
    /* After the callback: a wait for this task returns once it has run. */
    if (b != NULL) {
        batch_add(ctx, b, t);
    } else {
        /* A wait sleeps until slots empty: woken when one does, not at every completion. */
        int wake = !convoy__task_internal(t) &&
                   atomic_fetch_sub(&ctx->gen_count[t->gen % CONVOY__WAIT_GENS], 1) == 1 &&
                   atomic_load(&ctx->cut_waiters) > 0;
        wake |= atomic_load(&ctx->done_waiters) > 0;
        wake |= atomic_fetch_sub(&ctx->inflight, 1) == 1;
        if (wake)
            wake_done(ctx);
    }
    convoy__task_unref(t);
}

void convoy__task_complete_in(convoy__task_t *t, int outcome, const char *msg,
                              convoy__done_batch_t *b)
{
    convoy_context_t *ctx = t->cls->ctx;
    convoy__task_t *cancel_list = NULL;
    uint64_t ts_ns = ctx->trace != NULL && !convoy__task_internal(t) ? done_stamp(b) : 0;
    complete_one(ctx, t, outcome, msg, &cancel_list, b, ts_ns);
    while (cancel_list != NULL) {
        convoy__task_t *c = cancel_list;
        cancel_list = c->next;
        /* A task whose data could not be brought to it fails, naming the transfer. */
        complete_one(ctx, c, c->fetch_msg != NULL ? CONVOY__FAILED : CONVOY__CANCELLED,
                     c->fetch_msg, &cancel_list, b, 0);
    }
}

void convoy__task_complete(convoy__task_t *t, int outcome, const char *msg)
{
    convoy__task_complete_in(t, outcome, msg, NULL);
}

/* A flush task that brings d home from accelerator `from` and releases t when done (t
 * has counted it in pending). 0 when out of memory. */
static int request_flush(convoy_context_t *ctx, convoy__task_t *t, convoy_data_t *d, int from)
{
    convoy__task_t *f =
        convoy__task_new_internal(ctx, CONVOY__CLS_FLUSH, 1 + from, &d, NULL, 0);
    if (f == NULL)
        return 0;
    f->succ[f->nsucc++] = t;
    convoy__task_release(ctx, f);
    return 1;
}

/*
 * Rule R (coherence.h): the data of t whose newest version is dirty on an accelerator
 * other than the place t goes to. Each gets a flush home, and t waits for them: 0 when
 * t can be queued now, 1 when it waits (the last flush releases it again).
 */
static int fetch_for(convoy_context_t *ctx, convoy__task_t *t, int place)
{
    const convoy_class_t *cls = t->cls;
    convoy_data_t *need[CONVOY_MAX_FLOWS];
    int from[CONVOY_MAX_FLOWS], n = 0;
    for (int i = 0; i < cls->nflows; i++) {
        convoy_data_t *d = t->data[i];
        int j = convoy__coh_dirty_on(d), dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = need[k] == d;
        if (j != CONVOY__COH_HOST && j != place && !dup) {
            need[n] = d;
            from[n++] = j;
        } else if (j == CONVOY__COH_HOST && place == CONVOY__COH_HOST) {
            convoy__coh_read_home(d); /* the CPUs use the host's version */
        }
    }
    if (n == 0)
        return 0;
    if (t->fetch_rounds++ >= 8) {
        /* The data keep moving away (never seen in practice: a flush lands before the
         * task is looked at again); fail rather than loop. */
        convoy__task_complete(t, CONVOY__FAILED,
                              "its data kept moving between devices; no copy could be kept home");
        return 1;
    }
    atomic_store(&t->pending, n + 1);
    for (int k = 0; k < n; k++) {
        if (!request_flush(ctx, t, need[k], from[k])) {
            atomic_store(&t->cancel, 1);
            convoy__log_error("out of host memory for a flush of datum %llu",
                              (unsigned long long)need[k]->id);
            atomic_fetch_sub(&t->pending, 1);
        }
    }
    if (atomic_fetch_sub_explicit(&t->pending, 1, memory_order_acq_rel) == 1) {
        /* Every flush is done already: look again (the caller loops). */
        return -1;
    }
    return 1;
}

void convoy__task_make_ready(convoy_context_t *ctx, convoy__task_t *t)
{
    int q;
    for (;;) {
        if (atomic_load(&t->cancel)) {
            convoy__task_complete(t, t->fetch_msg != NULL ? CONVOY__FAILED : CONVOY__CANCELLED,
                                  t->fetch_msg);
            return;
        }
        q = convoy__task_internal(t) || ctx->use_cpu_only ? t->queue
            : t->where >= 0                               ? t->where
                            : ctx->sched->place(ctx->sched_state, ctx, t);
        t->queue = (int16_t)q;
        /* Transfers move data themselves; only the host side of an acquire fetches. */
        int fetches = !convoy__task_internal(t) || t->cls->internal == CONVOY__CLS_HOST ||
                      t->cls->internal == CONVOY__CLS_HOST_RW;
        int rc = fetches ? fetch_for(ctx, t, q - 1) : 0;
        if (rc == 0)
            break;
        if (rc > 0)
            return;
    }
    __atomic_store_n(&t->state, CONVOY__TASK_READY, __ATOMIC_RELEASE);
    t->t_ready_ns = convoy__now_ns();
    if (ctx->trace != NULL && !convoy__task_internal(t))
        convoy__trace_emit(ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_TASK,
                                                                .stage = CONVOY__STEP_READY,
                                                                .ts_ns = t->t_ready_ns,
                                                                .task_id = t->id,
                                                                .ring_id = -1,
                                                                .name = t->cls->name});
    convoy__queue_push(ctx, q, t);
}

int convoy__task_needs_home(convoy__task_t *t, const convoy_data_t *d, convoy_device_kind_t kind)
{
    int needs = 0;
    task_lock(t);
    for (int i = 0; i < t->nsucc && !needs; i++) {
        const convoy__task_t *s = t->succ[i];
        const convoy_class_t *cls = s->cls;
        if (convoy__task_internal(s) ||
            __atomic_load_n(&cls->chore[kind], __ATOMIC_ACQUIRE) != NULL ||
            __atomic_load_n(&cls->batch_chore[kind], __ATOMIC_ACQUIRE) != NULL)
            continue;
        for (int f = 0; f < cls->nflows && !needs; f++)
            needs = s->data[f] == d && (cls->modes[f] & CONVOY_READ);
    }
    task_unlock(t);
    return needs;
}

int convoy__task_has_successors(convoy__task_t *t)
{
    task_lock(t);
    int n = t->nsucc;
    task_unlock(t);
    return n > 0;
}

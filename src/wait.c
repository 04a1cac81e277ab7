/*
 * Waiting: convoy_wait's cut of the tasks inserted before it, the wait for one task,
 * and what convoy's own threads (chores, callbacks) may not wait for.
 *
 * Each convoy_wait starts a generation (ctx->gen); a program task counts in the slot of
 * the generation it was inserted in (a task a chore inserts: in its parent's), and the
 * wait sleeps until the slots of its generation and older ones are empty. Slots are a
 * ring of CONVOY__WAIT_GENS: a new generation takes a slot only once it is empty.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>

#include "src/coherence.h"
#include "src/context.h"
#include "src/core.h"

/* The chore running on this thread, if any: its context and oldest generation. */
static _Thread_local convoy_context_t *tls_chore_ctx;
static _Thread_local uint64_t tls_chore_gen;

void convoy__chore_join(const convoy__task_t *t)
{
    if (convoy__task_internal(t))
        return;
    if (tls_chore_ctx == NULL || t->gen < tls_chore_gen)
        tls_chore_gen = t->gen;
    tls_chore_ctx = t->cls->ctx;
}

void convoy__chore_leave(void)
{
    tls_chore_ctx = NULL;
}

uint64_t convoy__insert_gen(const convoy_context_t *ctx)
{
    return tls_chore_ctx == ctx ? tls_chore_gen : ctx->gen;
}

void convoy_task_fail(const convoy_task_view_t *task, int code)
{
    if (task == NULL)
        return;
    convoy__task_t *t = (convoy__task_t *)((char *)task - offsetof(convoy__task_t, view));
    t->fail_code = code != 0 ? code : -1;
}

convoy_status_t convoy__refuse_in_chore(convoy_context_t *ctx, const char *what)
{
    const char *role = convoy__thread_role();
    if (role == NULL)
        return CONVOY_SUCCESS;
    return convoy__error(ctx, CONVOY_ERR_STATE,
                         "%s called on %s (from a chore or a callback): it would wait for "
                         "convoy's own threads and never return; a chore may insert tasks and "
                         "read a datum's size and pointer, nothing that waits (doc/threads.md)",
                         what, role);
}

int convoy__task_wait(convoy_context_t *ctx, convoy__task_t *t)
{
    if (__atomic_load_n(&t->state, __ATOMIC_SEQ_CST) == CONVOY__TASK_DONE)
        return t->outcome;
    convoy__queues_expedite(ctx, 1);
    pthread_mutex_lock(&ctx->done_lock);
    atomic_fetch_add(&ctx->done_waiters, 1);
    while (__atomic_load_n(&t->state, __ATOMIC_SEQ_CST) != CONVOY__TASK_DONE)
        pthread_cond_wait(&ctx->done_cond, &ctx->done_lock);
    atomic_fetch_sub(&ctx->done_waiters, 1);
    pthread_mutex_unlock(&ctx->done_lock);
    convoy__queues_expedite(ctx, 0);
    return t->outcome;
}

/* Start a generation and return the last one a wait entering now waits for. The slot
 * the new generation takes must be free: when 63 older generations are still in flight,
 * wait for the oldest (this wait waits for it anyway). */
static uint64_t wait_cut(convoy_context_t *ctx)
{
    for (;;) {
        pthread_rwlock_wrlock(&ctx->insert_lock);
        pthread_mutex_lock(&ctx->done_lock);
        uint64_t next = ctx->gen + 1;
        int s = (int)(next % CONVOY__WAIT_GENS);
        if (atomic_load(&ctx->gen_count[s]) == 0) {
            atomic_store(&ctx->gen_of_slot[s], next);
            ctx->gen = next;
            pthread_mutex_unlock(&ctx->done_lock);
            pthread_rwlock_unlock(&ctx->insert_lock);
            return next - 1;
        }
        pthread_rwlock_unlock(&ctx->insert_lock);
        atomic_fetch_add(&ctx->cut_waiters, 1);
        while (atomic_load(&ctx->gen_count[s]) > 0 && ctx->gen + 1 == next)
            pthread_cond_wait(&ctx->done_cond, &ctx->done_lock);
        atomic_fetch_sub(&ctx->cut_waiters, 1);
        pthread_mutex_unlock(&ctx->done_lock);
    }
}

/* Under done_lock: is every task of generation `last` and older done? A slot counting a
 * newer generation was empty when it was taken, so its count is not ours. */
static int cut_done(convoy_context_t *ctx, uint64_t last)
{
    for (int s = 0; s < CONVOY__WAIT_GENS; s++)
        if (atomic_load(&ctx->gen_count[s]) > 0 && atomic_load(&ctx->gen_of_slot[s]) <= last)
            return 0;
    return 1;
}

convoy_status_t convoy_wait(convoy_context_t *ctx)
{
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_wait: ctx is NULL");
    convoy_status_t refused = convoy__refuse_in_chore(ctx, "convoy_wait");
    if (refused != CONVOY_SUCCESS)
        return refused;
    /* The tasks inserted before this call (and what their chores insert), not those
     * other threads insert meanwhile: a wait must end while an inserter runs on. */
    convoy__queues_expedite(ctx, 1);
    /* While a wait is pending, what is already dirty starts home at once, and devices
     * push the final versions home as their writers complete (device/pushout.c,
     * convoy__push_eager): the flush below then finds little left, and the rest moved
     * while the work still ran. */
    atomic_fetch_add(&ctx->waiting, 1);
    atomic_fetch_add_explicit(&ctx->wait_epoch, 1, memory_order_relaxed);
    if (convoy__coh_dirty_count(ctx) > 0 && atomic_load(&ctx->inflight) > 0)
        convoy__data_flush_all_start(ctx);
    uint64_t last = wait_cut(ctx);
    pthread_mutex_lock(&ctx->done_lock);
    atomic_fetch_add(&ctx->cut_waiters, 1);
    while (!cut_done(ctx, last))
        pthread_cond_wait(&ctx->done_cond, &ctx->done_lock);
    atomic_fetch_sub(&ctx->cut_waiters, 1);
    pthread_mutex_unlock(&ctx->done_lock);
    convoy__queues_expedite(ctx, 0);
    /* The host-side contract: host memory is current after a wait. After device writes
     * the flush runs even when nothing is left dirty: its completion orders every
     * pushout home the devices have seen land before the program reads host memory
     * (one internal task per accelerator when there is nothing to move). */
    convoy_status_t flushed = CONVOY_SUCCESS;
    if (atomic_exchange(&ctx->device_writes, 0) || convoy__coh_dirty_count(ctx) > 0)
        flushed = convoy__data_flush_all(ctx, 0);
    atomic_fetch_sub(&ctx->waiting, 1);

    pthread_mutex_lock(&ctx->error_lock);
    uint64_t failed = ctx->failures_since_wait, cancelled = ctx->cancels_since_wait;
    char first[1024], transfer[1024];
    snprintf(first, sizeof(first), "%s", ctx->first_failure);
    snprintf(transfer, sizeof(transfer), "%s", ctx->transfer_failure);
    ctx->failures_since_wait = ctx->cancels_since_wait = 0;
    ctx->first_failure[0] = ctx->transfer_failure[0] = '\0';
    ctx->fail_epoch++; /* tasks inserted from now on no longer inherit these failures */
    pthread_mutex_unlock(&ctx->error_lock);
    convoy__log_repeat_flush(ctx);
    /* A flush that could not even start (no memory for its internal task) left no
     * transfer failure behind: say so, rather than an empty cause. */
    if (flushed == CONVOY_ERR_NOMEM && transfer[0] == '\0')
        snprintf(transfer, sizeof(transfer), "out of host memory starting the flush home");
    if (flushed != CONVOY_SUCCESS && failed == 0)
        return convoy__error(
            ctx, flushed == CONVOY_ERR_NOMEM ? CONVOY_ERR_NOMEM : CONVOY_ERR_TASK_FAILED,
            "convoy_wait: some data could not be brought home: %s (a later wait "
            "or acquire tries again); %llu task(s) were cancelled",
            transfer, (unsigned long long)cancelled);
    if (failed == 0 && cancelled == 0)
        return CONVOY_SUCCESS;
    if (failed == 0)
        return convoy__error(ctx, CONVOY_ERR_TASK_FAILED,
                             "%llu task(s) cancelled by a failure reported earlier",
                             (unsigned long long)cancelled);
    return convoy__error(ctx, CONVOY_ERR_TASK_FAILED,
                         "%s; %llu task(s) failed and %llu were cancelled%s%s", first,
                         (unsigned long long)failed, (unsigned long long)cancelled,
                         flushed != CONVOY_SUCCESS ? "; some data could not be brought home: " : "",
                         flushed != CONVOY_SUCCESS ? transfer : "");
}

void convoy__wait_quiet(convoy_context_t *ctx)
{
    convoy__queues_expedite(ctx, 1); /* background drops do not sit out their ring's wait */
    pthread_mutex_lock(&ctx->done_lock);
    while (atomic_load(&ctx->inflight) > 0)
        pthread_cond_wait(&ctx->done_cond, &ctx->done_lock);
    pthread_mutex_unlock(&ctx->done_lock);
    convoy__queues_expedite(ctx, 0);
}

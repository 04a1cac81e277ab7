/*
 * Data handles: registration, acquire, free, and the flush of convoy_wait.
 *
 * What touches devices goes through internal tasks on the devices' queues (core.h,
 * CONVOY__CLS_*): an acquire is a host-side task in the graph, so it waits for the
 * datum's earlier tasks and fetches the newest version home like any CPU task; a free
 * adds a drop task per accelerator; a wait a flush-all per accelerator.
 */
#include "config.h"

#include <search.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/coherence.h"
#include "src/core.h"

/* The fields a progress thread touches per flow stay within the first line's worth of
 * bytes, and the dependency state that insertions write stays off their lines. */
_Static_assert(offsetof(convoy_data_t, dev) + sizeof(struct convoy__devcopy *) <= CONVOY__LINE,
               "convoy_data: a progress thread's fields outgrew 64 bytes");
_Static_assert(offsetof(convoy_data_t, dep_lock) >= 2 * CONVOY__LINE,
               "convoy_data: the dependency state is too close to a progress thread's fields");

/* Host ranges [host, host + bytes) in address order, overlapping ones comparing equal:
 * the live data never overlap, so a search for a new range finds one it overlaps, if
 * any, in O(log n) (glibc's tsearch is a red-black tree). */
static int range_cmp(const void *a, const void *b)
{
    const convoy_data_t *x = a, *y = b;
    uintptr_t xs = (uintptr_t)x->host, ys = (uintptr_t)y->host;
    if (xs + x->bytes <= ys)
        return -1;
    if (ys + y->bytes <= xs)
        return 1;
    return 0;
}

/* Under data_lock: enter d in the range tree; CONVOY_ERR_INVALID when its memory
 * overlaps a live datum's, naming both. */
static convoy_status_t enter_range(convoy_context_t *ctx, convoy_data_t *d)
{
    void *node = tsearch(d, &ctx->data_ranges, range_cmp);
    if (node == NULL)
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_data_new: out of host memory");
    const convoy_data_t *other = *(convoy_data_t *const *)node;
    if (other == d)
        return CONVOY_SUCCESS;
    return convoy__error(ctx, CONVOY_ERR_INVALID,
                         "convoy_data_new: host memory [%p, %p) (%zu bytes) overlaps datum %llu "
                         "at [%p, %p) (%zu bytes); a byte of host memory belongs to one datum at "
                         "most (free datum %llu first, or register the union once)",
                         d->host, (void *)((char *)d->host + d->bytes), d->bytes,
                         (unsigned long long)other->id, other->host,
                         (void *)((char *)other->host + other->bytes), other->bytes,
                         (unsigned long long)other->id);
}

/* The live handles of the process, by address, so that a handle freed already (twice,
 * or by convoy_fini) is refused before it is read: a freed handle's memory is gone (back
 * to the context's pool, reused only late, src/pool.h; or freed by convoy_fini).
 * One tsearch tree under its own lock; a handle leaves it when its free starts. */
static void *live_handles;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y ? -1 : x > y;
}

static int handle_enter(convoy_data_t *d)
{
    pthread_mutex_lock(&live_lock);
    int ok = tsearch(d, &live_handles, ptr_cmp) != NULL;
    pthread_mutex_unlock(&live_lock);
    return ok;
}

static int handle_live(const convoy_data_t *d)
{
    pthread_mutex_lock(&live_lock);
    int live = tfind(d, &live_handles, ptr_cmp) != NULL;
    pthread_mutex_unlock(&live_lock);
    return live;
}

/* Take d out of the live handles; 0 when it was not there (freed already). */
static int handle_leave(const convoy_data_t *d)
{
    pthread_mutex_lock(&live_lock);
    int found = tfind(d, &live_handles, ptr_cmp) != NULL;
    if (found)
        tdelete(d, &live_handles, ptr_cmp);
    pthread_mutex_unlock(&live_lock);
    return found;
}

static convoy_status_t not_live(const char *fn, const convoy_data_t *d)
{
    return convoy__error(NULL, CONVOY_ERR_INVALID,
                         "%s: %p is not a live data handle (freed already, by convoy_data_free "
                         "or convoy_fini)",
                         fn, (const void *)d);
}

convoy_status_t convoy_data_new(convoy_context_t *ctx, void *host_ptr, size_t bytes,
                                convoy_data_t **data_p)
{
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_data_new: ctx is NULL");
    if (host_ptr == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_data_new: host_ptr is NULL");
    if (bytes == 0)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_data_new: bytes is 0 (host_ptr %p); a datum needs at least "
                             "one byte",
                             host_ptr);
    if (data_p == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_data_new: data_p is NULL");
    if ((uintptr_t)host_ptr + bytes < (uintptr_t)host_ptr)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_data_new: %zu bytes at %p run past the end of the address "
                             "space",
                             bytes, host_ptr);
    convoy_data_t *d = convoy__pool_get(&ctx->data_pool);
    if (d == NULL)
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory for a data handle");
    memset(d, 0, sizeof(*d));
    d->ctx = ctx;
    d->host = host_ptr;
    d->bytes = bytes;
    d->host_pinned = convoy__host_is_pinned(ctx, host_ptr, bytes);
    /* A chore reading it in place is given its host address: only where the device
     * reaches it there (CUDA maps convoy's slabs at their host addresses; sim's chores run
     * on the host). */
    d->host_in_place =
        d->host_pinned && convoy__host_device_ptr(ctx, host_ptr, bytes) == (void *)host_ptr;
    d->readers = d->readers_inline;
    d->readers_cap = CONVOY__DATA_INLINE_READERS;
    atomic_init(&d->refs, 1);
    if (!handle_enter(d)) {
        convoy__pool_put(&ctx->data_pool, d);
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_data_new: out of host memory");
    }
    pthread_mutex_lock(&ctx->data_lock);
    convoy_status_t st = enter_range(ctx, d);
    if (st != CONVOY_SUCCESS) {
        pthread_mutex_unlock(&ctx->data_lock);
        handle_leave(d);
        convoy__pool_put(&ctx->data_pool, d);
        return st;
    }
    d->id = ctx->next_data_id++;
    d->next = ctx->data_list;
    if (ctx->data_list != NULL)
        ctx->data_list->prev = d;
    ctx->data_list = d;
    pthread_mutex_unlock(&ctx->data_lock);
    *data_p = d;
    return CONVOY_SUCCESS;
}

void *convoy_data_host_ptr(const convoy_data_t *data)
{
    return data != NULL ? data->host : NULL;
}

size_t convoy_data_bytes(const convoy_data_t *data)
{
    return data != NULL ? data->bytes : 0;
}

convoy_status_t convoy_data_set_flags(convoy_data_t *data, unsigned flags)
{
    const unsigned known = CONVOY_DATA_RESIDENT | CONVOY_DATA_SCRATCH;
    if (data == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_data_set_flags: data is NULL");
    if (!handle_live(data))
        return not_live("convoy_data_set_flags", data);
    if (flags & ~known)
        return convoy__error(data->ctx, CONVOY_ERR_INVALID,
                             "convoy_data_set_flags(datum %llu): unknown flags 0x%x; allowed: "
                             "CONVOY_DATA_RESIDENT (0x%x), CONVOY_DATA_SCRATCH (0x%x)",
                             (unsigned long long)data->id, flags & ~known,
                             (unsigned)CONVOY_DATA_RESIDENT, (unsigned)CONVOY_DATA_SCRATCH);
    /* Internal bits stay (a misused handle freed meanwhile keeps CONVOY__DATA_FREED). */
    unsigned old = atomic_load(&data->flags);
    while (!atomic_compare_exchange_weak(&data->flags, &old, (old & ~known) | flags))
        ;
    return CONVOY_SUCCESS;
}

/* Wait until the tasks that use d have completed: its last writer and its readers, up to
 * 16 not yet done at a time, on the stack (nothing to allocate, so no failure to fall
 * back from). Sweeps repeat until one finds none not done: the list may change between
 * passes (it compacts in add_reader and forget_failures, and a chore may insert a task
 * on d), so an index reached proves nothing; a sweep that finds every user done does. */
static void wait_for_users(convoy_data_t *d)
{
    convoy_context_t *ctx = d->ctx;
    int found;
    do {
        found = 0;
        for (int next = -1, swept = 0; !swept;) { /* -1: the last writer, then readers[next] */
            convoy__task_t *users[16];
            int k = 0;
            pthread_rwlock_rdlock(&ctx->insert_lock);
            convoy__data_dep_lock(d);
            for (; k < 16 && next < d->nreaders; next++) {
                convoy__task_t *t = next < 0 ? d->last_writer : d->readers[next];
                if (t != NULL &&
                    __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != CONVOY__TASK_DONE) {
                    atomic_fetch_add(&t->refs, 1);
                    users[k++] = t;
                }
            }
            swept = next >= d->nreaders;
            convoy__data_dep_unlock(d);
            pthread_rwlock_unlock(&ctx->insert_lock);
            for (int i = 0; i < k; i++) {
                convoy__task_wait(ctx, users[i]);
                convoy__task_unref(users[i]);
            }
            found |= k > 0;
        }
    } while (found);
}

/* Forget the datum's failed last writer and the readers it cancelled, under the insert
 * lock, so that later tasks (and a retried acquire) start from the newest valid version
 * instead of being cancelled by them. */
static void forget_failures(convoy_data_t *d)
{
    pthread_rwlock_rdlock(&d->ctx->insert_lock);
    convoy__data_dep_lock(d);
    if (d->last_writer != NULL &&
        __atomic_load_n(&d->last_writer->state, __ATOMIC_ACQUIRE) == CONVOY__TASK_DONE &&
        d->last_writer->outcome != CONVOY__OK) {
        convoy__task_unref(d->last_writer);
        d->last_writer = NULL;
    }
    int k = 0;
    for (int i = 0; i < d->nreaders; i++) {
        convoy__task_t *r = d->readers[i];
        if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == CONVOY__TASK_DONE &&
            r->outcome != CONVOY__OK)
            convoy__task_unref(r);
        else
            d->readers[k++] = r;
    }
    d->nreaders = k;
    convoy__data_dep_unlock(d);
    pthread_rwlock_unlock(&d->ctx->insert_lock);
}

/*
 * The host side of an acquire: a CPU task over d in the graph (after every task inserted
 * so far that uses d), which fetches the newest version home before it runs (rule R).
 * Returns its outcome, or -1 when it could not be made; *msg names a failure.
 */
static int host_side(convoy_data_t *d, convoy_access_t mode, char *why, size_t why_len)
{
    convoy_context_t *ctx = d->ctx;
    int kind = mode & CONVOY_WRITE ? CONVOY__CLS_HOST_RW : CONVOY__CLS_HOST;
    convoy__task_t *h = convoy__task_new_internal(ctx, kind, 0, &d, NULL, 0);
    if (h == NULL)
        return -1;
    atomic_fetch_add(&h->refs, 1); /* ours, for the wait */
    int tracked = convoy__task_track(ctx, h) == CONVOY_SUCCESS;
    convoy__task_release(ctx, h); /* untracked, it is cancelled and passes through */
    int outcome = convoy__task_wait(ctx, h);
    if (!tracked)
        outcome = -1; /* out of memory for its place in the graph */
    if (why != NULL && h->fetch_msg != NULL)
        snprintf(why, why_len, "%s", h->fetch_msg);
    convoy__task_unref(h);
    return outcome;
}

/* Has d nothing to wait for or fetch: every task that uses it done, its last writer
 * successfully, its newest version home, and no failed write to report? Then an acquire
 * to read and a free skip their internal task (a round trip through a CPU worker). */
static int idle_at_home(convoy_data_t *d)
{
    convoy_context_t *ctx = d->ctx;
    pthread_rwlock_rdlock(&ctx->insert_lock);
    convoy__data_dep_lock(d);
    convoy__task_t *w = d->last_writer;
    int idle = w == NULL || (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) == CONVOY__TASK_DONE &&
                             w->outcome == CONVOY__OK);
    for (int i = 0; i < d->nreaders && idle; i++)
        idle = __atomic_load_n(&d->readers[i]->state, __ATOMIC_ACQUIRE) == CONVOY__TASK_DONE;
    convoy__data_dep_unlock(d);
    pthread_rwlock_unlock(&ctx->insert_lock);
    return idle && convoy__coh_dirty_on(d) == CONVOY__COH_HOST &&
           atomic_load(&d->failed_writes) == 0;
}

/* The host side of an acquire after the datum's earlier tasks; when a failure before it
 * cancelled it, the failure is reported here (*cancelled_p) and forgotten once every
 * task it cancelled is done, and the newest valid version is brought home from wherever
 * it is. Returns the final outcome (-1: out of memory). */
static int bring_home(convoy_data_t *data, convoy_access_t mode, int *cancelled_p, char *why,
                      size_t why_len)
{
    if (mode == CONVOY_READ && idle_at_home(data)) {
        *cancelled_p = 0;
        return CONVOY__OK;
    }
    int outcome = host_side(data, mode, why, why_len);
    *cancelled_p = outcome == CONVOY__CANCELLED;
    if (*cancelled_p) {
        wait_for_users(data);
        forget_failures(data);
        outcome = host_side(data, mode, why, why_len);
    }
    return outcome;
}

convoy_status_t convoy_data_acquire(convoy_data_t *data, convoy_access_t mode)
{
    if (data == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_data_acquire: data is NULL");
    if (!handle_live(data))
        return not_live("convoy_data_acquire", data);
    if (mode != CONVOY_READ && mode != CONVOY_WRITE && mode != CONVOY_RW)
        return convoy__error(data->ctx, CONVOY_ERR_INVALID,
                             "convoy_data_acquire: access mode %d; allowed: CONVOY_READ (1), "
                             "CONVOY_WRITE (2), CONVOY_RW (3)",
                             (int)mode);
    convoy_context_t *ctx = data->ctx;
    convoy_status_t refused = convoy__refuse_in_chore(ctx, "convoy_data_acquire");
    if (refused != CONVOY_SUCCESS)
        return refused;
    int cancelled;
    char why[1024] = "a failure reported earlier";
    int outcome = bring_home(data, mode, &cancelled, why, sizeof(why));
    int failed = convoy__coh_take_failed(data);
    if (outcome < 0)
        return convoy__error(ctx, CONVOY_ERR_NOMEM,
                             "convoy_data_acquire(datum %llu): out of host memory",
                             (unsigned long long)data->id);
    if (outcome != CONVOY__OK) {
        return convoy__error(ctx, CONVOY_ERR_TASK_FAILED,
                             "convoy_data_acquire(datum %llu): its newest version could not be "
                             "brought home: %s",
                             (unsigned long long)data->id, why);
    }
    if (failed > 0 || cancelled) {
        char first[1024];
        pthread_mutex_lock(&ctx->error_lock);
        snprintf(first, sizeof(first), "%s", ctx->first_failure);
        pthread_mutex_unlock(&ctx->error_lock);
        return convoy__error(ctx, CONVOY_ERR_TASK_FAILED,
                             "convoy_data_acquire: %d task(s) writing datum %llu failed%s; the "
                             "host copy holds the newest valid version%s%s%s",
                             failed, (unsigned long long)data->id,
                             failed == 0 ? " or were cancelled" : "",
                             first[0] ? " (first failure: " : "", first, first[0] ? ")" : "");
    }
    convoy__coh_read_home(data);
    return CONVOY_SUCCESS;
}

/* Run one internal task of kind on every accelerator (flows: d or none, args copied)
 * and wait for them all. Returns the first failure's status. */
static convoy_status_t on_every_accel(convoy_context_t *ctx, int kind, convoy_data_t *d,
                                      const void *args, size_t args_size)
{
    convoy__task_t *t[CONVOY__MAX_ACCEL];
    int n = 0;
    convoy_status_t st = CONVOY_SUCCESS;
    for (int i = 0; i < ctx->naccel; i++) {
        t[n] = convoy__task_new_internal(ctx, kind, 1 + i, d != NULL ? &d : NULL, args, args_size);
        if (t[n] == NULL) {
            st = CONVOY_ERR_NOMEM;
            continue;
        }
        atomic_fetch_add(&t[n]->refs, 1);
        convoy__task_release(ctx, t[n]);
        n++;
    }
    for (int i = 0; i < n; i++) {
        if (convoy__task_wait(ctx, t[i]) != CONVOY__OK && st == CONVOY_SUCCESS)
            st = CONVOY_ERR_TASK_FAILED;
        convoy__task_unref(t[i]);
    }
    return st;
}

/* A flush-all's arguments (device/pushout.c reads them): {with_resident, only_final}. */
convoy_status_t convoy__data_flush_all(convoy_context_t *ctx, int with_resident)
{
    int how[2] = {with_resident, 0};
    return on_every_accel(ctx, CONVOY__CLS_FLUSH_ALL, NULL, how, sizeof(how));
}

void convoy__data_flush_all_start(convoy_context_t *ctx)
{
    int how[2] = {0, 1}; /* final versions only: what nothing will overwrite */
    for (int i = 0; i < ctx->naccel; i++) {
        convoy__task_t *t =
            convoy__task_new_internal(ctx, CONVOY__CLS_FLUSH_ALL, 1 + i, NULL, how, sizeof(how));
        if (t != NULL) /* without memory, the wait's own flush does it */
            convoy__task_release(ctx, t);
    }
}

/* Drop the datum's dependency references, under the insert lock. */
static void forget_users(convoy_data_t *d)
{
    if (d->last_writer != NULL)
        convoy__task_unref(d->last_writer);
    for (int i = 0; i < d->nreaders; i++)
        convoy__task_unref(d->readers[i]);
    d->last_writer = NULL;
    d->nreaders = 0;
    if (d->readers != d->readers_inline)
        free(d->readers);
    d->readers = d->readers_inline;
    d->readers_cap = CONVOY__DATA_INLINE_READERS;
}

void convoy__data_destroy(convoy_data_t *data)
{
    convoy_context_t *ctx = data->ctx;
    handle_leave(data); /* convoy_data_free took it out already */
    pthread_mutex_lock(&ctx->data_lock);
    tdelete(data, &ctx->data_ranges, range_cmp);
    if (data->prev != NULL)
        data->prev->next = data->next;
    else
        ctx->data_list = data->next;
    if (data->next != NULL)
        data->next->prev = data->prev;
    pthread_mutex_unlock(&ctx->data_lock);
    pthread_rwlock_rdlock(&ctx->insert_lock);
    convoy__data_dep_lock(data);
    forget_users(data);
    convoy__data_dep_unlock(data);
    pthread_rwlock_unlock(&ctx->insert_lock);
    convoy__data_unref(data);
}

static void drop_done(void *arg, uint64_t task_id, convoy_status_t status, const char *msg)
{
    (void)task_id;
    convoy_data_t *d = arg;
    if (status != CONVOY_SUCCESS)
        convoy__log_error("convoy_data_free: datum %llu: a device copy could not be freed: %s",
                          (unsigned long long)d->id, msg);
    convoy__data_unref(d);
}

/* Free d's device copies without waiting: nothing uses them any more, and no host byte
 * is touched, so the free returns at once (waiting for each accelerator's thread cost a
 * round trip per datum). Each drop holds a reference on d; convoy_fini waits for them.
 * Returns how many accelerators got no drop. */
static int drop_everywhere(convoy_context_t *ctx, convoy_data_t *d)
{
    int undropped = 0;
    for (int i = 0; i < ctx->naccel; i++) {
        convoy__task_t *t = convoy__task_new_internal(ctx, CONVOY__CLS_DROP, 1 + i, &d, NULL, 0);
        if (t == NULL) {
            convoy__log_error("convoy_data_free: datum %llu: out of host memory to free its copy "
                              "on %s; it is freed at convoy_fini",
                              (unsigned long long)d->id, ctx->accel[i]->name);
            undropped++;
            continue;
        }
        atomic_fetch_add(&d->refs, 1);
        t->done = drop_done;
        t->done_arg = d;
        convoy__task_release(ctx, t);
    }
    return undropped;
}

void convoy_data_free(convoy_data_t *data)
{
    if (data == NULL)
        return;
    if (!handle_live(data)) {
        not_live("convoy_data_free", data);
        convoy__log_error("%s", convoy_last_error(NULL));
        return;
    }
    convoy_context_t *ctx = data->ctx;
    if (convoy__refuse_in_chore(ctx, "convoy_data_free") != CONVOY_SUCCESS) {
        /* The handle stays valid: freeing it would wait for the caller's own task. */
        /* This thread's copy of the message: the context's may be replaced meanwhile. */
        convoy__log_error("%s; datum %llu is not freed", convoy_last_error(NULL),
                          (unsigned long long)data->id);
        return;
    }
    /* Claimed: a second free of it from here on (another thread's) is refused. */
    if (!handle_leave(data)) {
        not_live("convoy_data_free", data);
        convoy__log_error("%s", convoy_last_error(NULL));
        return;
    }
    int cancelled;
    char why[1024] = "its flush home failed";
    int home = (atomic_load(&data->flags) & CONVOY_DATA_SCRATCH) ||
               bring_home(data, CONVOY_READ, &cancelled, why, sizeof(why)) == CONVOY__OK;
    /* Every task that uses it, readers too (bring_home waits only for the last writer): a
     * reader still to run reads the host memory, which the program may reuse once this
     * returns, through its stage-in or in place (CONVOY_CLASS_INPUTS_IN_PLACE). Before, a
     * free returned with a reader pending and the reader computed on whatever the program
     * then wrote there (tests/check_in_place free_waits_for_readers). */
    wait_for_users(data);
    if (!home && convoy__coh_dirty_on(data) != CONVOY__COH_HOST)
        /* The newest version could not come home (its flush failed and was reported):
         * freed anyway, as asked; the message says what was lost. */
        convoy__log_error("convoy_data_free: datum %llu freed while its newest version is only "
                          "on an accelerator: %s",
                          (unsigned long long)data->id, why);
    /* A pushout home may still be on its way into the host memory (written behind, then
     * made scratch; or evicted): nothing touches it once the free has returned. */
    while (atomic_load_explicit(&data->pushing, memory_order_acquire) > 0)
        convoy__sleep_until_ns(convoy__now_ns() + 20000);
    atomic_fetch_or(&data->flags, CONVOY__DATA_FREED);
    /* A copy on an accelerator that got no drop holds no reference (device/devmem.c): the
     * handle stays, off the data list, until convoy_fini has freed the copies. */
    int undropped = drop_everywhere(ctx, data);
    if (undropped > 0)
        atomic_fetch_add(&data->refs, 1);
    convoy__data_destroy(data);
    if (undropped > 0) {
        pthread_mutex_lock(&ctx->data_lock);
        data->next = ctx->undropped;
        ctx->undropped = data;
        pthread_mutex_unlock(&ctx->data_lock);
    }
}
void convoy__data_unref(convoy_data_t *data)
{
    if (atomic_fetch_sub(&data->refs, 1) == 1)
        convoy__pool_put(&data->ctx->data_pool, data);
}

/*
 * Insertion: a task's dependencies inferred from its flows, under its data's own locks.
 *
 * Dependencies come from each flow's access mode in insertion order: a reader waits for
 * the datum's last writer; a writer waits for the last writer and every reader since.
 * A task's `pending` counts the predecessors not yet done plus one guard held during
 * insertion, so a task cannot become ready while its edges are still being added (the
 * guard is dropped by convoy__task_release, src/task.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core.h"
#include "src/task_impl.h"

/* Make succ wait for pred unless pred is done. A predecessor that failed or was
 * cancelled, and whose failure no convoy_wait has reported yet, cancels succ. */
static void add_dependency(convoy_context_t *ctx, convoy__task_t *pred, convoy__task_t *succ)
{
    if (pred == succ)
        return;
    if (task_state(pred) == CONVOY__TASK_DONE) {
        /* Final, and its outcome was written before it: no lock, and no write to a line
         * that the thread that completed it holds. */
        if (pred->outcome != CONVOY__OK && pred->fail_epoch == ctx->fail_epoch)
            atomic_store(&succ->cancel, 1);
        return;
    }
    task_lock(pred);
    if (task_state(pred) == CONVOY__TASK_DONE) {
        task_unlock(pred);
        if (pred->outcome != CONVOY__OK && pred->fail_epoch == ctx->fail_epoch)
            atomic_store(&succ->cancel, 1);
        return;
    }
    if (pred->nsucc == pred->succ_cap) {
        int cap = 2 * pred->succ_cap;
        convoy__task_t **s = malloc((size_t)cap * sizeof(*s));
        if (s == NULL) {
            /* Without room for the edge, run succ after pred by waiting here: slow but
             * right, and only when the host is out of memory. */
            task_unlock(pred);
            convoy__log_warn("out of memory for a dependency edge; waiting for task %llu",
                             (unsigned long long)pred->id);
            while (task_state(pred) != CONVOY__TASK_DONE)
                convoy__sleep_until_ns(convoy__now_ns() + 100000);
            return;
        }
        memcpy(s, pred->succ, (size_t)pred->nsucc * sizeof(*s));
        if (pred->succ != pred->succ_inline)
            free(pred->succ);
        pred->succ = s;
        pred->succ_cap = cap;
    }
    pred->succ[pred->nsucc++] = succ;
    atomic_fetch_add_explicit(&succ->pending, 1, memory_order_relaxed);
    task_unlock(pred);
}

/* The reference the list holds to t is one of those track_flows took ahead. */
static int add_reader(convoy_data_t *d, convoy__task_t *t)
{
    if (d->nreaders == d->readers_cap) {
        /* Forget readers that are done before growing: a datum read by a long stream of
         * tasks keeps only the ones still running. */
        int k = 0;
        for (int i = 0; i < d->nreaders; i++) {
            if (task_state(d->readers[i]) == CONVOY__TASK_DONE &&
                d->readers[i]->outcome == CONVOY__OK)
                convoy__task_unref(d->readers[i]);
            else
                d->readers[k++] = d->readers[i];
        }
        d->nreaders = k;
    }
    if (d->nreaders == d->readers_cap) {
        int cap = 2 * d->readers_cap;
        convoy__task_t **r = d->readers == d->readers_inline
                                 ? malloc((size_t)cap * sizeof(*r))
                                 : realloc(d->readers, (size_t)cap * sizeof(*r));
        if (r == NULL)
            return -1;
        if (d->readers == d->readers_inline)
            memcpy(r, d->readers_inline, sizeof(d->readers_inline));
        d->readers = r;
        d->readers_cap = cap;
    }
    d->readers[d->nreaders++] = t;
    return 0;
}

/* Under d's dep_lock: wire t's dependencies through one flow. The reference a reader
 * list or last_writer takes to t is one of *spare_refs, taken ahead by track_flows. */
static convoy_status_t track_flow(convoy_context_t *ctx, convoy__task_t *t, convoy_data_t *d,
                                  convoy_access_t mode, int *spare_refs)
{
    if (d->last_writer != NULL)
        add_dependency(ctx, d->last_writer, t);
    if (!(mode & CONVOY_WRITE)) {
        if (add_reader(d, t) != 0)
            return convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for a reader list");
        (*spare_refs)--;
        return CONVOY_SUCCESS;
    }
    for (int i = 0; i < d->nreaders; i++) {
        add_dependency(ctx, d->readers[i], t);
        convoy__task_unref(d->readers[i]);
    }
    d->nreaders = 0;
    if (d->last_writer != t) {
        (*spare_refs)--;
        if (d->last_writer != NULL)
            convoy__task_unref(d->last_writer);
        d->last_writer = t;
        atomic_store_explicit(&d->last_writer_id, t->id + 1, memory_order_release);
    }
    return CONVOY_SUCCESS;
}

void convoy__data_dep_lock(convoy_data_t *d)
{
    convoy__spin_lock(&d->dep_lock);
}

void convoy__data_dep_unlock(convoy_data_t *d)
{
    convoy__spin_unlock(&d->dep_lock);
}

/* t's distinct data in address order, into out; returns how many. */
static int flows_in_order(const convoy__task_t *t, convoy_data_t **out)
{
    int n = 0;
    for (int i = 0; i < t->cls->nflows; i++) {
        convoy_data_t *d = t->data[i];
        int k = n;
        while (k > 0 && (uintptr_t)out[k - 1] > (uintptr_t)d)
            k--;
        if (k > 0 && out[k - 1] == d)
            continue;
        for (int j = n; j > k; j--) /* a few pointers: a loop beats a memmove call */
            out[j] = out[j - 1];
        out[k] = d;
        n++;
    }
    return n;
}

/* Wire every flow of t into the graph: under insert_lock shared, with t's data locked
 * in address order (so two tasks sharing data are ordered alike on each). Stops at the
 * first error. Sets t's id from counter when it is non-NULL (under the locks, so ids
 * rise along each datum's tasks). The references the data's lists hold to t, one a flow
 * at most, are taken in one locked add before any list can see t, and those not used
 * given back before any datum is unlocked (the caller's own keeps t alive meanwhile):
 * one each, they were 4 of the 19 locked instructions of an insertion of 4 flows
 * (bench/host_profile.py). */
static convoy_status_t track_flows(convoy_context_t *ctx, convoy__task_t *t,
                                   _Atomic uint64_t *counter, uint64_t id_bits)
{
    convoy_data_t *order[CONVOY_MAX_FLOWS];
    int n = flows_in_order(t, order);
    for (int i = 0; i < n; i++)
        convoy__data_dep_lock(order[i]);
    if (counter != NULL) {
        t->id = id_bits | atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
        t->view.task_id = t->id;
    }
    convoy_status_t st = CONVOY_SUCCESS;
    int spare_refs = t->cls->nflows;
    if (spare_refs > 0)
        atomic_fetch_add_explicit(&t->refs, spare_refs, memory_order_relaxed);
    for (int i = 0; i < t->cls->nflows && st == CONVOY_SUCCESS; i++)
        st = track_flow(ctx, t, t->data[i], t->cls->modes[i], &spare_refs);
    if (spare_refs > 0)
        atomic_fetch_sub_explicit(&t->refs, spare_refs, memory_order_relaxed);
    for (int i = n - 1; i >= 0; i--)
        convoy__data_dep_unlock(order[i]);
    return st;
}

/* Has cls a chore for kind? Loaded atomically: another thread may set it meanwhile. */
static int has_chore(const convoy_class_t *cls, convoy_device_kind_t kind)
{
    return __atomic_load_n(&cls->chore[kind], __ATOMIC_ACQUIRE) != NULL ||
           __atomic_load_n(&cls->batch_chore[kind], __ATOMIC_ACQUIRE) != NULL;
}

/* Which device kinds could run the class here: a short list for error messages. */
static int runnable_here(const convoy_context_t *ctx, const convoy_class_t *cls)
{
    if (has_chore(cls, CONVOY_DEVICE_CPU))
        return 1;
    for (int i = 0; i < ctx->naccel; i++)
        if (has_chore(cls, ctx->accel[i]->kind))
            return 1;
    return 0;
}

/* Can the class run where opts pins it? */
static convoy_status_t check_where(convoy_context_t *ctx, const convoy_class_t *cls, int where)
{
    if (where < CONVOY_WHERE_CPU || where > ctx->naccel)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_task_insert_ex(%s): where %d is out of range; allowed: "
                             "CONVOY_WHERE_ANY (0), CONVOY_WHERE_CPU (-1), CONVOY_WHERE_ACCEL(i) "
                             "for the %d accelerator(s) in use (1..%d)",
                             cls->name, where, ctx->naccel, ctx->naccel);
    if (where == CONVOY_WHERE_ANY)
        return CONVOY_SUCCESS;
    convoy_device_kind_t kind =
        where == CONVOY_WHERE_CPU ? CONVOY_DEVICE_CPU : ctx->accel[where - 1]->kind;
    if (!has_chore(cls, kind))
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_task_insert_ex(%s): pinned to %s, but the class has no chore "
                             "for it",
                             cls->name,
                             where == CONVOY_WHERE_CPU ? "the CPUs" : ctx->accel[where - 1]->name);
    return CONVOY_SUCCESS;
}

static convoy_status_t check_insert(convoy_context_t *ctx, convoy_class_t *cls, const void *args,
                                    size_t args_size, convoy_data_t *const *flows,
                                    const convoy_task_opts_t *opts)
{
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_task_insert: ctx is NULL");
    if (cls == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_task_insert: cls is NULL");
    if (cls->ctx != ctx)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_task_insert: class '%s' belongs to another context",
                             cls->name);
    if (args_size > 0 && args == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_task_insert(%s): args is NULL but args_size is %zu", cls->name,
                             args_size);
    if (flows == NULL)
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_task_insert(%s): flows is NULL; the class has %d flows",
                             cls->name, cls->nflows);
    for (int i = 0; i < cls->nflows; i++) {
        if (flows[i] == NULL)
            return convoy__error(ctx, CONVOY_ERR_INVALID,
                                 "convoy_task_insert(%s): flow %d of %d is NULL", cls->name, i,
                                 cls->nflows);
        if (flows[i]->ctx != ctx)
            return convoy__error(ctx, CONVOY_ERR_INVALID,
                                 "convoy_task_insert(%s): flow %d is a datum of another context",
                                 cls->name, i);
    }
    if (!runnable_here(ctx, cls)) {
        char devs[256];
        size_t o = (size_t)snprintf(devs, sizeof(devs), "cpu");
        for (int i = 0; i < ctx->naccel && o < sizeof(devs); i++)
            o += (size_t)snprintf(devs + o, sizeof(devs) - o, ", %s", ctx->accel[i]->name);
        return convoy__error(ctx, CONVOY_ERR_INVALID,
                             "convoy_task_insert: class '%s' has no chore for any device in use "
                             "(%s)",
                             cls->name, devs);
    }
    return opts != NULL ? check_where(ctx, cls, opts->where) : CONVOY_SUCCESS;
}

/* A task of cls over flows, args copied, with its creation guard held; NULL when out
 * of memory (recorded on ctx). */
static convoy__task_t *task_alloc(convoy_context_t *ctx, convoy_class_t *cls, const void *args,
                                  size_t args_size, convoy_data_t *const *flows)
{
    int n = cls->nflows;
    convoy__task_t *t = convoy__task_record_new(ctx, n);
    if (t == NULL) {
        convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for a task of class %s", cls->name);
        return NULL;
    }
    t->cls = cls;
    atomic_init(&t->pending, 1);
    atomic_init(&t->refs, 1);
    t->ring_id = -1;
    t->where = -1;
    t->succ = t->succ_inline;
    t->succ_cap = CONVOY__TASK_INLINE_SUCC;
    t->args_size = args_size;
    t->args = t->inline_args;
    if (args_size > CONVOY__TASK_INLINE_ARGS) {
        t->args = malloc(args_size);
        if (t->args == NULL) {
            convoy__task_unref(t); /* its only reference: back to its pool */
            convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for %zu argument bytes of class %s",
                          args_size, cls->name);
            return NULL;
        }
    }
    if (args_size > 0)
        memcpy(t->args, args, args_size);
    void **ptrs = convoy__task_ptrs(t);
    size_t *bytes = convoy__task_bytes(t);
    for (int i = 0; i < n; i++) {
        t->data[i] = flows[i];
        ptrs[i] = flows[i]->host;
        bytes[i] = flows[i]->bytes;
        for (int e = 0; e < i; e++)
            t->aliased |= flows[e] == flows[i];
    }
    t->view = (convoy_task_view_t){
        .flows = ptrs, .flow_bytes = bytes, .nflows = n, .args = t->args, .args_size = args_size};
    /* A clock read is about 3% of an insertion on the H200 host (perf, overhead's
     * inserting thread): only the trace uses this one. */
    t->t_insert_ns = ctx->trace != NULL ? convoy__now_ns() : 0;
    return t;
}

convoy_status_t convoy_task_insert(convoy_context_t *ctx, convoy_class_t *cls, const void *args,
                                   size_t args_size, convoy_data_t *const *flows)
{
    return convoy_task_insert_ex(ctx, cls, args, args_size, flows, NULL);
}

convoy_status_t convoy_task_insert_ex(convoy_context_t *ctx, convoy_class_t *cls, const void *args,
                                      size_t args_size, convoy_data_t *const *flows,
                                      const convoy_task_opts_t *opts)
{
    convoy_status_t st = check_insert(ctx, cls, args, args_size, flows, opts);
    if (st != CONVOY_SUCCESS)
        return st;
    if (ctx->dist_hooks != NULL) {
        int here = 1; /* the distributed layer: is the task this rank's? (dist/) */
        st = ctx->dist_hooks->route(ctx, cls, flows, opts, &here);
        if (st != CONVOY_SUCCESS || !here)
            return st;
    }
    convoy__task_t *t = task_alloc(ctx, cls, args, args_size, flows);
    if (t == NULL)
        return CONVOY_ERR_NOMEM;
    pthread_rwlock_rdlock(&ctx->insert_lock);
    t->gen = convoy__insert_gen(ctx);
    atomic_fetch_add(&ctx->gen_count[t->gen % CONVOY__WAIT_GENS], 1);
    st = track_flows(ctx, t, &ctx->next_task_id, 0);
    if (opts != NULL && st == CONVOY_SUCCESS) {
        /* An insertion that fails never calls back (the task passes as cancelled). */
        t->where = (int16_t)(opts->where == CONVOY_WHERE_ANY   ? -1
                             : opts->where == CONVOY_WHERE_CPU ? 0
                                                               : opts->where);
        t->done = opts->done;
        t->done_arg = opts->done_arg;
    }
    atomic_fetch_add(&ctx->inflight, 1);
    pthread_rwlock_unlock(&ctx->insert_lock);
    if (ctx->trace != NULL)
        convoy__trace_emit(ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_TASK,
                                                                .stage = CONVOY__STEP_INSERTED,
                                                                .ts_ns = t->t_insert_ns,
                                                                .task_id = t->id,
                                                                .ring_id = -1,
                                                                .name = cls->name});
    if (st != CONVOY_SUCCESS) {
        /* Some edges exist: the task must still pass through completion, as a failure,
         * so that its successors and readers are released. */
        atomic_store(&t->cancel, 1);
        convoy__log_error("%s", convoy_last_error(NULL));
    }
    convoy__task_release(ctx, t);
    return st;
}

convoy__task_t *convoy__task_new_internal(convoy_context_t *ctx, int kind, int queue,
                                          convoy_data_t *const *flows, const void *args,
                                          size_t args_size)
{
    convoy__task_t *t = task_alloc(ctx, ctx->internal[kind], args, args_size, flows);
    if (t == NULL)
        return NULL;
    /* The top bit keeps internal ids apart from the program's insertion numbers. */
    t->id =
        (1ull << 63) | atomic_fetch_add_explicit(&ctx->next_internal_id, 1, memory_order_relaxed);
    t->view.task_id = t->id;
    t->queue = (int16_t)queue;
    atomic_fetch_add(&ctx->inflight, 1);
    return t;
}

convoy_status_t convoy__task_track(convoy_context_t *ctx, convoy__task_t *t)
{
    pthread_rwlock_rdlock(&ctx->insert_lock);
    convoy_status_t st = track_flows(ctx, t, NULL, 0);
    pthread_rwlock_unlock(&ctx->insert_lock);
    if (st != CONVOY_SUCCESS)
        atomic_store(&t->cancel, 1);
    return st;
}

/*
 * Context: init and fini.
 */
#include "config.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline.h"
#include "src/coherence.h"
#include "src/context.h"
#include "src/core.h"
#include "src/proc.h"

const convoy__params_t *convoy__ctx_params(const convoy_context_t *ctx)
{
    return &ctx->params;
}

int convoy__ctx_accel_count(const convoy_context_t *ctx)
{
    return ctx->naccel;
}

convoy__device_t *convoy__ctx_accel(const convoy_context_t *ctx, int index)
{
    return index >= 0 && index < ctx->naccel ? ctx->accel[index] : NULL;
}

/* hwloc sets errno: out of memory is CONVOY_ERR_NOMEM like any other. */
static convoy_status_t topology_error(const char *step)
{
    int e = errno;
    return convoy__error(NULL, e == ENOMEM ? CONVOY_ERR_NOMEM : CONVOY_ERR_UNAVAILABLE,
                         "hwloc could not read the topology (hwloc_topology_%s: %s)", step,
                         strerror(e));
}

/* Everything convoy_init made, in reverse; safe on a partly built context. */
static void context_destroy(convoy_context_t *ctx)
{
    convoy__workers_stop(ctx);
    for (int i = 0; i < ctx->naccel; i++)
        convoy__pipeline_stop(ctx->accel[i]);
    /* The device copies go with the pipelines (nothing is in flight any more), then the
     * handles still alive. */
    for (int i = 0; i < ctx->naccel; i++)
        convoy__pipeline_destroy(ctx->accel[i]);
    while (ctx->undropped != NULL) { /* their copies are gone now */
        convoy_data_t *d = ctx->undropped;
        ctx->undropped = d->next;
        convoy__data_unref(d);
    }
    while (ctx->data_list != NULL)
        convoy__data_destroy(ctx->data_list);
    convoy__close_devices(ctx);
    if (ctx->sched != NULL && ctx->sched_state != NULL)
        ctx->sched->fini(ctx->sched_state);
    for (int i = 0; i < ctx->nclasses; i++) {
        free(ctx->classes[i]->name);
        free(ctx->classes[i]);
    }
    free(ctx->classes);
    convoy__hostmem_fini(ctx);
    if (ctx->qwait != NULL) {
        for (int q = 0; q < ctx->nqueues; q++) {
            convoy__log_debug("queue %d: %llu pushes, %llu wake-ups sent by them, %llu by "
                              "workers handing over",
                              q, (unsigned long long)atomic_load(&ctx->qwait[q].pushes),
                              (unsigned long long)atomic_load(&ctx->qwait[q].signals),
                              (unsigned long long)atomic_load(&ctx->qwait[q].handoffs));
            pthread_mutex_destroy(&ctx->qwait[q].lock);
            pthread_cond_destroy(&ctx->qwait[q].cond);
        }
        free(ctx->qwait);
    }
    if (ctx->topology != NULL)
        hwloc_topology_destroy((hwloc_topology_t)ctx->topology);
    convoy__params_free(&ctx->params);
    pthread_rwlock_destroy(&ctx->insert_lock);
    pthread_mutex_destroy(&ctx->done_lock);
    pthread_cond_destroy(&ctx->done_cond);
    pthread_mutex_destroy(&ctx->error_lock);
    pthread_mutex_destroy(&ctx->data_lock);
    /* Last: every task record and data handle has gone back by now (a leak is logged). */
    convoy__pool_destroy(&ctx->data_pool);
    for (size_t k = 0; k < CONVOY__TASK_POOLS; k++)
        convoy__pool_destroy(&ctx->task_pools[k]);
    free(ctx);
}

static convoy_status_t init_queues(convoy_context_t *ctx)
{
    ctx->nqueues = 1 + ctx->naccel;
    ctx->qwait = convoy__calloc_lines(ctx, (size_t)ctx->nqueues * sizeof(*ctx->qwait), "queues");
    if (ctx->qwait == NULL)
        return CONVOY_ERR_NOMEM;
    /* Set before any progress thread starts: they read it (convoy__cpu_poller_wake). */
    ctx->busy_poll = convoy__param_double(&ctx->params, "spin_busy_us") >
                     convoy__param_double(&ctx->params, "spin_us");
    for (int q = 0; q < ctx->nqueues; q++) {
        pthread_mutex_init(&ctx->qwait[q].lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&ctx->qwait[q].cond, &ca);
        pthread_condattr_destroy(&ca);
    }
    return ctx->sched->init(ctx, ctx->nqueues, &ctx->sched_state);
}

convoy_status_t convoy_init(int *argc, char ***argv, convoy_context_t **ctx_p)
{
    if (ctx_p == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_init: ctx_p is NULL");
    /* Aligned: its counters that different threads write sit on lines of their own. */
    size_t size = (sizeof(convoy_context_t) + CONVOY__LINE - 1) / CONVOY__LINE * CONVOY__LINE;
    convoy_context_t *ctx = aligned_alloc(CONVOY__LINE, size);
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of memory for the context");
    memset(ctx, 0, size);
    pthread_rwlockattr_t rw;
    pthread_rwlockattr_init(&rw);
#ifdef __GLIBC__
    /* A wait's cut must not starve behind a stream of insertions. */
    pthread_rwlockattr_setkind_np(&rw, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    pthread_rwlock_init(&ctx->insert_lock, &rw);
    pthread_rwlockattr_destroy(&rw);
    pthread_mutex_init(&ctx->done_lock, NULL);
    pthread_cond_init(&ctx->done_cond, NULL);
    pthread_mutex_init(&ctx->error_lock, NULL);
    pthread_mutex_init(&ctx->data_lock, NULL);
    convoy__pool_init(&ctx->data_pool, sizeof(convoy_data_t), "data handles");
    for (size_t k = 0; k < CONVOY__TASK_POOLS; k++)
        convoy__pool_init(&ctx->task_pools[k], (k + 1) * CONVOY__LINE, "task records");
    snprintf(ctx->error, sizeof(ctx->error), "no error");

    convoy_status_t st = convoy__params_load(&ctx->params, argc, argv);
    if (st != CONVOY_SUCCESS)
        goto err;
    /* Messages without a context follow the newest context (util.h). */
    atomic_store_explicit(&convoy__log_threshold, ctx->params.log_level, memory_order_relaxed);
    ctx->check_host_writes = (int)convoy__param_int(&ctx->params, "check_host_writes");
    ctx->cpu_write_backup = (int)convoy__param_int(&ctx->params, "cpu_write_backup");
    if ((st = convoy__classes_init_internal(ctx)) != CONVOY_SUCCESS)
        goto err;
    const char *prefix = convoy__param_str(&ctx->params, "log_prefix");
    atomic_store(&convoy__log_prefix, strcmp(prefix, "on") == 0 || (strcmp(prefix, "auto") == 0 &&
                                                                    convoy__proc_rank() >= 0));

    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        st = topology_error("init");
        goto err;
    }
    ctx->topology = topo; /* destroyed by the teardown from here on, loaded or not */
    if (hwloc_topology_load(topo) != 0) {
        st = topology_error("load");
        goto err;
    }

    const char *trace_path = convoy__param_str(&ctx->params, "trace");
    if (trace_path[0] != '\0') {
        st = convoy__trace_open(ctx, trace_path,
                                (int)convoy__param_int(&ctx->params, "trace_flows"), &ctx->trace);
        if (st != CONVOY_SUCCESS)
            goto err;
    }
    if ((st = convoy__select_sched(ctx)) != CONVOY_SUCCESS)
        goto err;
    if ((st = convoy__select_devices(ctx)) != CONVOY_SUCCESS)
        goto err;
    if ((st = init_queues(ctx)) != CONVOY_SUCCESS)
        goto err;
    for (int i = 0; i < ctx->naccel; i++)
        if ((st = convoy__pipeline_start(ctx->accel[i])) != CONVOY_SUCCESS)
            goto err;
    if ((st = convoy__workers_start(ctx)) != CONVOY_SUCCESS)
        goto err;
    convoy__log_info("started: scheduler %s, %d CPU workers, %d accelerators", ctx->sched->name,
                     ctx->nworkers, ctx->naccel);
    *ctx_p = ctx;
    return CONVOY_SUCCESS;

err : {
    /* Keep the message through the teardown, which may record errors of its own. */
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
    /* The trace stays set while the threads stop (they read ctx->trace without a lock:
     * clearing it here raced with a worker naming itself); it is discarded after. */
    convoy__trace_t *trace = ctx->trace;
    context_destroy(ctx);
    if (trace != NULL)
        convoy__trace_discard(trace);
    /* Not logged at 'error': the caller gets the message (convoy_last_error(NULL)) and
     * decides; logging it too printed every init error twice. */
    return convoy__error(NULL, st, "%s", msg);
}
}

void convoy_fini(convoy_context_t *ctx)
{
    if (ctx == NULL)
        return;
    /* From a chore it would wait for the chore itself: refuse, leave the context. */
    if (convoy__refuse_in_chore(ctx, "convoy_fini") != CONVOY_SUCCESS) {
        convoy__log_error("%s; the context is left as it is", convoy_last_error(NULL));
        return;
    }
    if (ctx->dist_hooks != NULL)
        ctx->dist_hooks->fini(ctx); /* the distributed layer's wait and stop (dist/) */
    if (convoy_wait(ctx) != CONVOY_SUCCESS)
        convoy__log_ctx(ctx, CONVOY__LOG_WARN, "convoy_fini: %s", convoy_last_error(NULL));
    /* The program's last chance to see its data: resident ones come home too (scratch
     * ones never do). */
    if (convoy__coh_dirty_count(ctx) > 0 && convoy__data_flush_all(ctx, 1) != CONVOY_SUCCESS)
        convoy__log_error("convoy_fini: some data could not be brought home: %s",
                          convoy_last_error(ctx));
    /* Internal tasks still queued (the drops of freed data) end before the devices go. */
    convoy__wait_quiet(ctx);
    convoy__log_repeat_flush(ctx);
    convoy__trace_t *trace = ctx->trace;
    context_destroy(ctx);
    /* Written last so that teardown events are in; the context is gone, so errors go to
     * the log only. */
    if (trace != NULL && convoy__trace_close(trace) != CONVOY_SUCCESS)
        convoy__log_error("%s", convoy_last_error(NULL));
}

void convoy_get_stats(const convoy_context_t *ctx, convoy_stats_t *s)
{
    if (s == NULL)
        return;
    memset(s, 0, sizeof(*s));
    if (ctx == NULL)
        return;
    const convoy__stats_atomic_t *a = &ctx->stats;
    s->tasks_inserted = atomic_load_explicit(&ctx->next_task_id, memory_order_relaxed);
    s->tasks_completed = a->tasks_completed;
    s->tasks_failed = a->tasks_failed;
    s->tasks_cancelled = a->tasks_cancelled;
    s->rings = a->rings;
    s->launches = a->launches;
    s->h2d_submissions = a->h2d_submissions;
    s->h2d_copies = a->h2d_copies;
    s->h2d_bytes = a->h2d_bytes;
    s->d2h_submissions = a->d2h_submissions;
    s->d2h_copies = a->d2h_copies;
    s->d2h_bytes = a->d2h_bytes;
    s->split_copies = a->split_copies;
    s->retried_copies = a->retried_copies;
    s->evictions = a->evictions;
    s->d2d_copies = a->d2d_copies;
    s->d2d_bytes = a->d2d_bytes;
    s->flush_copies = a->flush_copies;
    s->eviction_submissions = a->eviction_submissions;
    s->eviction_copies = a->eviction_copies;
    s->transfers_failed = a->transfers_failed;
    s->write_behind_copies = a->write_behind_copies;
    s->in_place_reads = a->in_place_reads;
    s->in_place_bytes = a->in_place_bytes;
    if (ctx->dist_hooks != NULL)
        ctx->dist_hooks->stats(ctx, s);
}

const char *convoy_sched_name(const convoy_context_t *ctx)
{
    return ctx != NULL ? ctx->sched->name : NULL;
}

int convoy_accel_count(const convoy_context_t *ctx)
{
    return ctx != NULL ? ctx->naccel : 0;
}

const char *convoy_accel_name(const convoy_context_t *ctx, int index)
{
    return ctx != NULL && index >= 0 && index < ctx->naccel ? ctx->accel[index]->name : NULL;
}

/*
 * Data handles: registration, acquire, free.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "device/pipeline.h"
#include "src/core.h"

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
    convoy_data_t *d = convoy__calloc(ctx, 1, sizeof(*d), "a data handle");
    if (d == NULL)
        return CONVOY_ERR_NOMEM;
    d->ctx = ctx;
    d->host = host_ptr;
    d->bytes = bytes;
    d->host_pinned = convoy__host_is_pinned(ctx, host_ptr, bytes);
    atomic_init(&d->refs, 1);
    pthread_mutex_lock(&ctx->data_lock);
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

/* Wait until the tasks that use d have completed. */
static void wait_for_users(convoy_data_t *d)
{
    convoy_context_t *ctx = d->ctx;
    pthread_mutex_lock(&ctx->insert_lock);
    int n = d->nreaders + (d->last_writer != NULL);
    convoy__task_t *stack[16];
    convoy__task_t **users = n <= 16 ? stack : malloc((size_t)n * sizeof(*users));
    int k = 0;
    if (users != NULL) {
        if (d->last_writer != NULL)
            users[k++] = d->last_writer;
        for (int i = 0; i < d->nreaders; i++)
            users[k++] = d->readers[i];
        for (int i = 0; i < k; i++)
            atomic_fetch_add(&users[i]->refs, 1);
    }
    pthread_mutex_unlock(&ctx->insert_lock);
    if (users == NULL) {
        /* No memory for the list: waiting for everything is slower but just as right. */
        convoy_wait(ctx);
        return;
    }
    pthread_mutex_lock(&ctx->done_lock);
    atomic_fetch_add(&ctx->done_waiters, 1);
    for (int i = 0; i < k; i++) {
        while (__atomic_load_n(&users[i]->state, __ATOMIC_SEQ_CST) != CONVOY__TASK_DONE)
            pthread_cond_wait(&ctx->done_cond, &ctx->done_lock);
    }
    atomic_fetch_sub(&ctx->done_waiters, 1);
    pthread_mutex_unlock(&ctx->done_lock);
    for (int i = 0; i < k; i++)
        convoy__task_unref(users[i]);
    if (users != stack)
        free(users);
}

convoy_status_t convoy_data_acquire(convoy_data_t *data, convoy_access_t mode)
{
    if (data == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_data_acquire: data is NULL");
    if (mode != CONVOY_READ && mode != CONVOY_WRITE && mode != CONVOY_RW)
        return convoy__error(data->ctx, CONVOY_ERR_INVALID,
                             "convoy_data_acquire: access mode %d; allowed: CONVOY_READ (1), "
                             "CONVOY_WRITE (2), CONVOY_RW (3)",
                             (int)mode);
    wait_for_users(data);
    /* Pushout is part of every device task, so the host copy is the newest now. A write
     * by the program makes every device copy stale. */
    if (mode & CONVOY_WRITE)
        atomic_fetch_add(&data->version, 1);
    int failed = atomic_exchange(&data->failed_writes, 0);
    if (failed > 0) {
        /* The failure is reported here: later tasks on this datum start from the host
         * copy instead of being cancelled by the failed writer. */
        pthread_mutex_lock(&data->ctx->insert_lock);
        if (data->last_writer != NULL && data->last_writer->outcome != CONVOY__OK) {
            convoy__task_unref(data->last_writer);
            data->last_writer = NULL;
        }
        /* Readers of the failed version were cancelled: they must not cancel a later
         * writer either (they are done: wait_for_users waited for them). */
        int k = 0;
        for (int i = 0; i < data->nreaders; i++) {
            convoy__task_t *r = data->readers[i];
            if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == CONVOY__TASK_DONE &&
                r->outcome != CONVOY__OK)
                convoy__task_unref(r);
            else
                data->readers[k++] = r;
        }
        data->nreaders = k;
        pthread_mutex_unlock(&data->ctx->insert_lock);
    }
    if (failed > 0)
        return convoy__error(data->ctx, CONVOY_ERR_TASK_FAILED,
                             "convoy_data_acquire: %d task(s) writing datum %llu failed; the host "
                             "copy holds the newest valid version",
                             failed, (unsigned long long)data->id);
    return CONVOY_SUCCESS;
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
    free(d->readers);
    d->readers = NULL;
    d->readers_cap = 0;
}

void convoy_data_free(convoy_data_t *data)
{
    if (data == NULL)
        return;
    convoy_context_t *ctx = data->ctx;
    wait_for_users(data);
    pthread_mutex_lock(&ctx->data_lock);
    if (data->prev != NULL)
        data->prev->next = data->next;
    else
        ctx->data_list = data->next;
    if (data->next != NULL)
        data->next->prev = data->prev;
    pthread_mutex_unlock(&ctx->data_lock);
    for (int i = 0; i < ctx->naccel; i++)
        convoy__pipeline_drop_copy(ctx->accel[i], data);
    pthread_mutex_lock(&ctx->insert_lock);
    forget_users(data);
    pthread_mutex_unlock(&ctx->insert_lock);
    convoy__data_unref(data);
}

void convoy__data_unref(convoy_data_t *data)
{
    if (atomic_fetch_sub(&data->refs, 1) == 1)
        free(data);
}

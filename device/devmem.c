/*
 * Device memory: copies, users, LRU and eviction (see devmem.h).
 */
#include "config.h"

#include <stdlib.h>

#include "device/devmem.h"

void convoy__devmem_init(convoy__devmem_t *dm, convoy__device_t *dev)
{
    pthread_mutex_init(&dm->lock, NULL);
    dm->dev = dev;
    dm->lru_head = dm->lru_tail = NULL;
    dm->bytes_in_use = 0;
    dm->evictions = 0;
}

static void lru_remove(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    if (c->lru_prev != NULL)
        c->lru_prev->lru_next = c->lru_next;
    else
        dm->lru_head = c->lru_next;
    if (c->lru_next != NULL)
        c->lru_next->lru_prev = c->lru_prev;
    else
        dm->lru_tail = c->lru_prev;
    c->lru_prev = c->lru_next = NULL;
}

static void lru_append(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    c->lru_next = NULL;
    c->lru_prev = dm->lru_tail;
    if (dm->lru_tail != NULL)
        dm->lru_tail->lru_next = c;
    else
        dm->lru_head = c;
    dm->lru_tail = c;
}

/* Free an unused copy and detach it from its datum. Under dm->lock. */
static void free_copy(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    lru_remove(dm, c);
    dm->dev->ops->mem_free(dm->dev, c->ptr);
    dm->bytes_in_use -= c->data->bytes;
    c->data->dev[dm->dev->index] = NULL;
    int expected = dm->dev->index + 1;
    atomic_compare_exchange_strong(&c->data->home_hint, &expected, 0);
    convoy__data_unref(c->data);
    free(c);
}

convoy_status_t convoy__devmem_acquire(convoy__devmem_t *dm, convoy_data_t *data,
                                       convoy__devcopy_t **copy_p)
{
    convoy__device_t *dev = dm->dev;
    pthread_mutex_lock(&dm->lock);
    convoy__devcopy_t *c = data->dev[dev->index];
    if (c != NULL) {
        if (c->users++ == 0)
            lru_remove(dm, c);
        pthread_mutex_unlock(&dm->lock);
        *copy_p = c;
        return CONVOY_SUCCESS;
    }
    convoy_status_t st;
    void *ptr = NULL;
    if (data->bytes > dev->mem_capacity) {
        st = convoy__error(dev->ctx, CONVOY_ERR_NOMEM,
                           "datum %llu needs %zu bytes; %s has %zu bytes of memory",
                           (unsigned long long)data->id, data->bytes, dev->name, dev->mem_capacity);
        goto out;
    }
    while ((st = dev->ops->mem_alloc(dev, data->bytes, &ptr)) == CONVOY_ERR_NOMEM &&
           dm->lru_head != NULL) {
        free_copy(dm, dm->lru_head);
        dm->evictions++;
        atomic_fetch_add_explicit(&dev->ctx->stats.evictions, 1, memory_order_relaxed);
    }
    if (st != CONVOY_SUCCESS)
        goto out;
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        dev->ops->mem_free(dev, ptr);
        st = convoy__error(dev->ctx, CONVOY_ERR_NOMEM, "out of host memory for a device copy");
        goto out;
    }
    c->data = data;
    c->ptr = ptr;
    c->version = CONVOY__NO_VERSION;
    c->users = 1;
    c->stage_ring = -1;
    atomic_fetch_add(&data->refs, 1);
    data->dev[dev->index] = c;
    dm->bytes_in_use += data->bytes;
    *copy_p = c;
out:
    pthread_mutex_unlock(&dm->lock);
    return st;
}

void convoy__devmem_release(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    pthread_mutex_lock(&dm->lock);
    if (--c->users == 0)
        lru_append(dm, c);
    pthread_mutex_unlock(&dm->lock);
}

void convoy__devmem_pin(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    pthread_mutex_lock(&dm->lock);
    if (c->pinned) { /* already kept: one hold is enough */
        pthread_mutex_unlock(&dm->lock);
        return;
    }
    c->pinned = 1;
    if (c->users++ == 0)
        lru_remove(dm, c);
    c->version = CONVOY__NO_VERSION;
    c->lru_prev = NULL;
    c->lru_next = dm->pinned;
    dm->pinned = c;
    pthread_mutex_unlock(&dm->lock);
    convoy__log_error("%s: %zu bytes of device memory of datum %llu are kept out of use: a "
                      "transfer may still touch them",
                      dm->dev->name, c->data->bytes, (unsigned long long)c->data->id);
}

void convoy__devmem_drop(convoy__devmem_t *dm, convoy_data_t *data)
{
    pthread_mutex_lock(&dm->lock);
    convoy__devcopy_t *c = data->dev[dm->dev->index];
    if (c != NULL && c->users == 0)
        free_copy(dm, c);
    else if (c != NULL)
        convoy__log_error("%s: datum %llu freed while %d task(s) use it", dm->dev->name,
                          (unsigned long long)data->id, c->users);
    pthread_mutex_unlock(&dm->lock);
}

void convoy__devmem_fini(convoy__devmem_t *dm)
{
    pthread_mutex_lock(&dm->lock);
    while (dm->lru_head != NULL)
        free_copy(dm, dm->lru_head);
    while (dm->pinned != NULL) {
        convoy__devcopy_t *c = dm->pinned;
        dm->pinned = c->lru_next;
        c->lru_next = NULL;
        c->users = 0;
        lru_append(dm, c); /* so that free_copy finds it where it looks */
        free_copy(dm, c);
    }
    pthread_mutex_unlock(&dm->lock);
    pthread_mutex_destroy(&dm->lock);
}

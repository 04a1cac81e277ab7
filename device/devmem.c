/*
 * Device memory: copies, users, LRU and eviction (see devmem.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "device/devmem.h"
#include "src/coherence.h"

void convoy__devmem_init(convoy__devmem_t *dm, convoy__device_t *dev, size_t cache_bytes)
{
    dm->dev = dev;
    for (int i = 0; i < CONVOY__LRU_LISTS; i++)
        dm->lru[i] = (convoy__devlru_t){0};
    dm->pinned = NULL;
    dm->kept = NULL;
    dm->all = NULL;
    dm->written = NULL;
    dm->spare = NULL;
    dm->nspare = 0;
    dm->bytes_in_use = 0;
    dm->evictions = 0;
    convoy__devcache_init(&dm->cache, cache_bytes);
}

/* Give a buffer no one uses back: to the cache, or to the device. */
static void block_free(convoy__devmem_t *dm, void *ptr, size_t bytes)
{
    if (!convoy__devcache_keep(&dm->cache, ptr, bytes))
        dm->dev->ops->mem_free(dm->dev, ptr);
}

static void device_free(void *arg, void *ptr)
{
    convoy__device_t *dev = arg;
    dev->ops->mem_free(dev, ptr);
}

/* A copy of a freed datum: its drop may still be queued (a ring of drops waits to fill),
 * but nothing will read it, not even its host memory, which may be gone. */
static int freed(const convoy__devcopy_t *c)
{
    return (atomic_load_explicit(&c->data->flags, memory_order_relaxed) & CONVOY__DATA_FREED) != 0;
}

int convoy__devmem_dirty(const convoy__devmem_t *dm, const convoy__devcopy_t *c)
{
    uint64_t v;
    int on;
    if (freed(c))
        return 0;
    convoy__coh_get(c->data, &v, &on);
    return c->version == v && on == dm->dev->index;
}

void convoy__devmem_note_written(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    if (c->on_written)
        return;
    c->on_written = 1;
    c->written_prev = NULL;
    c->written_next = dm->written;
    if (dm->written != NULL)
        dm->written->written_prev = c;
    dm->written = c;
}

void convoy__devmem_unnote_written(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    if (!c->on_written)
        return;
    if (c->written_prev != NULL)
        c->written_prev->written_next = c->written_next;
    else
        dm->written = c->written_next;
    if (c->written_next != NULL)
        c->written_next->written_prev = c->written_prev;
    c->on_written = 0;
    c->written_prev = c->written_next = NULL;
}

static void lru_remove(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    convoy__devlru_t *l = &dm->lru[c->lru_list];
    if (c->lru_prev != NULL)
        c->lru_prev->lru_next = c->lru_next;
    else
        l->head = c->lru_next;
    if (c->lru_next != NULL)
        c->lru_next->lru_prev = c->lru_prev;
    else
        l->tail = c->lru_prev;
    c->lru_prev = c->lru_next = NULL;
}

static void lru_append_to(convoy__devmem_t *dm, convoy__devcopy_t *c, int list)
{
    convoy__devlru_t *l = &dm->lru[list];
    c->lru_list = list;
    c->lru_next = NULL;
    c->lru_prev = l->tail;
    if (l->tail != NULL)
        l->tail->lru_next = c;
    else
        l->head = c;
    l->tail = c;
}

/* Will c stay clean while unused? Not when a pushout of it is in flight, nor when it
 * holds a version newer than the datum's: a writer's copy is released just before its
 * completion commits that version (device/ring.c), and then it is dirty. */
static int stays_clean(const convoy__devmem_t *dm, const convoy__devcopy_t *c)
{
    uint64_t v;
    int on;
    convoy__coh_get(c->data, &v, &on);
    if (c->out_ev != NULL || c->version == CONVOY__NO_VERSION || freed(c))
        return c->out_ev == NULL;
    return c->version < v || (c->version == v && on != dm->dev->index);
}

static void lru_append(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    lru_append_to(dm, c, stays_clean(dm, c) ? CONVOY__LRU_CLEAN : CONVOY__LRU_DIRTY);
}

/* Free a copy no one uses and detach it from its datum; it is in no LRU. Its memory
 * goes to the cache when keep (not when it is freed to make room: an allocation of
 * another size needs the memory). */
static void free_copy(convoy__devmem_t *dm, convoy__devcopy_t *c, int keep)
{
    convoy__devmem_unnote_written(dm, c);
    convoy__devmem_out_over(dm, c); /* no pushout of it is in flight by now */
    if (c->all_prev != NULL)
        c->all_prev->all_next = c->all_next;
    else
        dm->all = c->all_next;
    if (c->all_next != NULL)
        c->all_next->all_prev = c->all_prev;
    if (keep)
        block_free(dm, c->ptr, c->data->bytes);
    else
        dm->dev->ops->mem_free(dm->dev, c->ptr);
    dm->bytes_in_use -= c->data->bytes;
    c->data->dev[dm->dev->index] = NULL;
    convoy__coh_clear_hint(c->data, dm->dev->index);
    if (c->data_ref)
        convoy__data_unref(c->data);
    /* Kept for the next copy: a record per flow per task, malloc'd on this thread and
     * freed here, was a quarter of the progress thread's instructions in tiny_tasks. */
    if (dm->nspare < CONVOY__DEVMEM_SPARES) {
        c->all_next = dm->spare;
        dm->spare = c;
        dm->nspare++;
    } else {
        free(c);
    }
}

/* DIRTY copies a walk looks at for one overwritten elsewhere before giving up: bounded,
 * so an allocation never walks every dirty copy (take_dirty's walk moves the rest). */
#define CONVOY__DIRTY_PEEK 16

/* The least recently used copy that can be freed at once, out of its LRU; NULL: none. */
static convoy__devcopy_t *clean_victim_take(convoy__devmem_t *dm)
{
    convoy__devcopy_t *c = dm->lru[CONVOY__LRU_CLEAN].head;
    if (c == NULL) {
        c = dm->lru[CONVOY__LRU_DIRTY].head;
        for (int i = 0; c != NULL && i < CONVOY__DIRTY_PEEK && !stays_clean(dm, c); i++)
            c = c->lru_next;
        if (c != NULL && !stays_clean(dm, c))
            c = NULL;
    }
    if (c != NULL)
        lru_remove(dm, c);
    return c;
}

/* Allocate bytes within the device's capacity for convoy (mem_capacity, which the
 * parameter device_memory may lower): a kept block of that size, else from the device,
 * giving the kept blocks back and then freeing clean unused copies (least recently used
 * first) while the device is full. */
static convoy_status_t alloc_evicting(convoy__devmem_t *dm, size_t bytes, void **ptr_p)
{
    convoy__device_t *dev = dm->dev;
    if (bytes > dev->mem_capacity)
        return convoy__error(dev->ctx, CONVOY_ERR_NOMEM,
                             "%zu bytes asked; %s has %zu bytes of memory", bytes, dev->name,
                             dev->mem_capacity);
    if (dm->bytes_in_use + bytes <= dev->mem_capacity &&
        (*ptr_p = convoy__devcache_take(&dm->cache, bytes)) != NULL)
        return CONVOY_SUCCESS;
    for (;;) {
        convoy_status_t st = CONVOY_ERR_NOMEM;
        int within = dm->bytes_in_use + bytes <= dev->mem_capacity;
        if (within)
            st = dev->ops->mem_alloc(dev, bytes, ptr_p);
        if (st != CONVOY_ERR_NOMEM)
            return st;
        /* The device is full, not convoy's share of it (kept blocks are not in use): the
         * kept blocks go back first. */
        if (within && atomic_load_explicit(&dm->cache.held, memory_order_relaxed) > 0) {
            convoy__devcache_drain(&dm->cache, device_free, dev);
            continue;
        }
        convoy__devcopy_t *c = clean_victim_take(dm);
        if (c == NULL)
            return convoy__error(dev->ctx, CONVOY_ERR_NOMEM,
                                 "%s: %zu bytes asked, %zu of %zu in use and no clean copy to free",
                                 dev->name, bytes, dm->bytes_in_use, dev->mem_capacity);
        free_copy(dm, c, 0);
        dm->evictions++;
        atomic_fetch_add_explicit(&dev->ctx->stats.evictions, 1, memory_order_relaxed);
    }
}

convoy_status_t convoy__devmem_acquire(convoy__devmem_t *dm, convoy_data_t *data,
                                       convoy__devcopy_t **copy_p)
{
    convoy__device_t *dev = dm->dev;
    convoy__devcopy_t *c = data->dev[dev->index];
    if (c != NULL) {
        if (c->users++ == 0 && !c->evicting)
            lru_remove(dm, c);
        c->evicting = 0; /* in use again: it stays once its pushout lands */
        *copy_p = c;
        return CONVOY_SUCCESS;
    }
    void *ptr = NULL;
    convoy_status_t st = alloc_evicting(dm, data->bytes, &ptr);
    if (st == CONVOY_ERR_NOMEM && data->bytes > dev->mem_capacity)
        st = convoy__error(dev->ctx, CONVOY_ERR_NOMEM,
                           "datum %llu needs %zu bytes; %s has %zu bytes of memory",
                           (unsigned long long)data->id, data->bytes, dev->name, dev->mem_capacity);
    if (st != CONVOY_SUCCESS)
        goto out;
    c = dm->spare;
    if (c != NULL) {
        dm->spare = c->all_next;
        dm->nspare--;
        memset(c, 0, sizeof(*c));
        /* The next copy reuses the next record, freed long ago: its lines are cold. */
        if (dm->spare != NULL)
            convoy__devcopy_prefetch(dm->spare);
    } else {
        c = calloc(1, sizeof(*c));
    }
    if (c == NULL) {
        block_free(dm, ptr, data->bytes);
        st = convoy__error(dev->ctx, CONVOY_ERR_NOMEM, "out of host memory for a device copy");
        goto out;
    }
    c->data = data;
    c->ptr = ptr;
    c->version = CONVOY__NO_VERSION;
    c->users = 1;
    c->stage_ring = -1;
    /* No reference on data: the user's keeps it until convoy_data_free, then each
     * accelerator's drop until it has run, and a copy its drop leaves takes one there
     * (convoy__devmem_drop). A locked add here for each new copy held half of this
     * function's samples on the H100 hosts (doc/results.md, 2026-12-06, ninth session). */
    data->dev[dev->index] = c;
    c->all_next = dm->all;
    if (dm->all != NULL)
        dm->all->all_prev = c;
    dm->all = c;
    dm->bytes_in_use += data->bytes;
    *copy_p = c;
out:
    return st;
}

convoy__devcopy_t *convoy__devmem_lookup(convoy__devmem_t *dm, convoy_data_t *data)
{
    convoy__devcopy_t *c = data->dev[dm->dev->index];
    if (c != NULL) {
        if (c->users++ == 0 && !c->evicting)
            lru_remove(dm, c);
        c->evicting = 0;
    }
    return c;
}

void convoy__devmem_release(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    if (--c->users == 0 && !c->pinned)
        lru_append(dm, c);
}

convoy_status_t convoy__devmem_alloc_buffer(convoy__devmem_t *dm, size_t bytes, void **ptr_p)
{
    convoy_status_t st = alloc_evicting(dm, bytes, ptr_p);
    if (st == CONVOY_SUCCESS)
        dm->bytes_in_use += bytes;
    return st;
}

void convoy__devmem_free_buffer(convoy__devmem_t *dm, void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return;
    block_free(dm, ptr, bytes);
    dm->bytes_in_use -= bytes;
}

void convoy__devmem_replace(convoy__devmem_t *dm, convoy__devcopy_t *c, void *ptr)
{
    if (c->pinned) {
        /* A pushout may still read the old memory (convoy__devmem_pin): never reuse it. */
        convoy__devmem_keep_buffer(dm, c->ptr, c->data->bytes);
    } else if (c->out_ev != NULL && c->out_ptr == NULL) {
        /* A pushout home reads it: freed when that is over (convoy__devmem_out_over), so
         * that the writer completes without waiting for the link home. */
        c->out_ptr = c->ptr;
    } else {
        block_free(dm, c->ptr, c->data->bytes);
        dm->bytes_in_use -= c->data->bytes;
    }
    c->ptr = ptr;
}

void convoy__devmem_out_over(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    if (c->out_ptr == NULL)
        return;
    block_free(dm, c->out_ptr, c->data->bytes);
    dm->bytes_in_use -= c->data->bytes;
    c->out_ptr = NULL;
}

void convoy__devmem_keep_buffer(convoy__devmem_t *dm, void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return;
    convoy__devkept_t *k = malloc(sizeof(*k));
    if (k != NULL) { /* without a record it is never freed: lost until the process ends */
        *k = (convoy__devkept_t){.ptr = ptr, .bytes = bytes, .next = dm->kept};
        dm->kept = k;
    }
    convoy__log_error("%s: %zu bytes of device memory are kept out of use: a transfer may "
                      "still touch them",
                      dm->dev->name, bytes);
}

int convoy__devmem_take_dirty(convoy__devmem_t *dm, size_t want, int limit, convoy__devcopy_t **out,
                              int max)
{
    int n = 0;
    size_t got = 0;
    convoy__devlru_t *l = &dm->lru[CONVOY__LRU_DIRTY];
    for (convoy__devcopy_t *c = l->head, *next; c != NULL && n < max && got < want; c = next) {
        next = c->lru_next;
        if (c->out_ev != NULL || c->evict_failures >= limit)
            continue;
        lru_remove(dm, c);
        if (stays_clean(dm, c)) {
            lru_append_to(dm, c, CONVOY__LRU_CLEAN); /* overwritten elsewhere: free to go */
            continue;
        }
        c->evicting = 1;
        out[n++] = c;
        got += c->data->bytes;
    }
    return n;
}

void convoy__devmem_settle(convoy__devmem_t *dm, convoy__devcopy_t *c)
{
    if (c->users == 0 && c->evicting && !c->out_failed) {
        free_copy(dm, c, 0); /* evicted: its memory is wanted */
        dm->evictions++;
        atomic_fetch_add_explicit(&dm->dev->ctx->stats.evictions, 1, memory_order_relaxed);
    } else if (c->users == 0 && c->evicting) {
        c->evicting = 0; /* still the only newest version: keep it, maybe evict later */
        lru_append(dm, c);
    } else if (c->users == 0 && !c->pinned && c->lru_list == CONVOY__LRU_DIRTY &&
               stays_clean(dm, c)) {
        lru_remove(dm, c); /* its pushout home landed: a clean victim now */
        lru_append_to(dm, c, CONVOY__LRU_CLEAN);
    }
}

void convoy__devmem_pin(convoy__devmem_t *dm, convoy__devcopy_t *c, int keep_version)
{
    if (c->pinned) { /* already kept: one hold is enough */
        return;
    }
    c->pinned = 1;
    if (c->users++ == 0 && !c->evicting)
        lru_remove(dm, c);
    if (!keep_version)
        c->version = CONVOY__NO_VERSION;
    c->lru_prev = NULL;
    c->lru_next = dm->pinned;
    dm->pinned = c;
    convoy__log_error("%s: %zu bytes of device memory of datum %llu are kept out of use: a "
                      "transfer may still touch them",
                      dm->dev->name, c->data->bytes, (unsigned long long)c->data->id);
}

void convoy__devmem_drop(convoy__devmem_t *dm, convoy_data_t *data)
{
    convoy__devcopy_t *c = data->dev[dm->dev->index];
    if (c != NULL && c->users == 0 && !c->pinned && c->out_ev == NULL) {
        if (!c->evicting)
            lru_remove(dm, c);
        free_copy(dm, c, 1);
        return;
    }
    if (c == NULL)
        return;
    /* It stays (kept out of use, in use, or a pushout of it in flight): it keeps the
     * handle it points to until it goes, the drop's own reference going next. */
    if (!c->data_ref) {
        atomic_fetch_add(&data->refs, 1);
        c->data_ref = 1;
    }
    if (!c->pinned)
        convoy__log_error("%s: datum %llu freed while %d task(s) use it", dm->dev->name,
                          (unsigned long long)data->id, c->users);
}

void convoy__devmem_fini(convoy__devmem_t *dm)
{
    for (int i = 0; i < CONVOY__LRU_LISTS; i++)
        while (dm->lru[i].head != NULL) {
            convoy__devcopy_t *c = dm->lru[i].head;
            lru_remove(dm, c);
            free_copy(dm, c, 0);
        }
    while (dm->pinned != NULL) {
        convoy__devcopy_t *c = dm->pinned;
        dm->pinned = c->lru_next;
        free_copy(dm, c, 0);
    }
    while (dm->kept != NULL) {
        convoy__devkept_t *k = dm->kept;
        dm->kept = k->next;
        dm->dev->ops->mem_free(dm->dev, k->ptr);
        dm->bytes_in_use -= k->bytes;
        free(k);
    }
    convoy__devcache_drain(&dm->cache, device_free, dm->dev);
    convoy__devcache_fini(&dm->cache);
    while (dm->spare != NULL) {
        convoy__devcopy_t *c = dm->spare;
        dm->spare = c->all_next;
        free(c);
    }
}

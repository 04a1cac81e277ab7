/*
 * Pools of fixed-size records (see pool.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "src/pool.h"

#define FIRST_OBJS 16u /* records in a pool's first chunk; each next one doubles ... */
#define MAX_OBJS 1024u /* ... up to this: 320 KiB of data handles */

void convoy__pool_init(convoy__pool_t *p, size_t size, const char *what)
{
    p->size = (size + CONVOY__LINE - 1) / CONVOY__LINE * CONVOY__LINE;
    p->what = what;
    atomic_init(&p->lock, 0);
    p->free = p->free_tail = NULL;
    p->carve = p->carve_end = NULL;
    p->chunks = NULL;
    p->next_objs = FIRST_OBJS;
    p->carved = 0;
    atomic_init(&p->returned, NULL);
}

static size_t list_length(const convoy__pool_link_t *l)
{
    size_t n = 0;
    for (; l != NULL; l = l->next)
        n++;
    return n;
}

size_t convoy__pool_destroy(convoy__pool_t *p)
{
    if (p == NULL || p->size == 0)
        return 0;
    size_t back = list_length(p->free) +
                  list_length(atomic_load_explicit(&p->returned, memory_order_acquire));
    size_t lost = p->carved - back;
    if (lost > 0) {
        convoy__log_error("convoy_fini: %zu %s (%zu bytes each) were never given back: a leak "
                          "in convoy; their memory stays allocated",
                          lost, p->what, p->size);
    } else {
        for (void *c = p->chunks, *next; c != NULL; c = next) {
            next = *(void **)c;
            free(c);
        }
    }
    p->chunks = NULL;
    p->free = p->free_tail = NULL;
    atomic_store(&p->returned, NULL);
    p->size = 0;
    return lost;
}

/* A new chunk to carve from, under the lock; 0 without memory. Its first line links it. */
static int grow(convoy__pool_t *p)
{
    size_t bytes = CONVOY__LINE + p->next_objs * p->size;
    void *c = aligned_alloc(CONVOY__LINE, bytes);
    if (c == NULL)
        return 0;
    *(void **)c = p->chunks;
    p->chunks = c;
    p->carve = (char *)c + CONVOY__LINE;
    p->carve_end = (char *)c + bytes;
    if (p->next_objs < MAX_OBJS)
        p->next_objs *= 2;
    return 1;
}

static void *carve(convoy__pool_t *p)
{
    void *r = p->carve;
    p->carve += p->size;
    p->carved++;
    return r;
}

/* Under the lock: the records given back since the last take join the free list's
 * tail, turned round so that the oldest comes first (the lock-free list holds the
 * newest first). */
static void take_returned(convoy__pool_t *p)
{
    convoy__pool_link_t *r = atomic_exchange_explicit(&p->returned, NULL, memory_order_acquire);
    convoy__pool_link_t *oldest = NULL, *newest = r;
    while (r != NULL) {
        convoy__pool_link_t *next = r->next;
        r->next = oldest;
        oldest = r;
        r = next;
    }
    if (oldest == NULL)
        return;
    if (p->free_tail != NULL)
        p->free_tail->next = oldest;
    else
        p->free = oldest;
    p->free_tail = newest;
}

void *convoy__pool_get(convoy__pool_t *p)
{
    if (CONVOY__POOL_BYPASS)
        return aligned_alloc(CONVOY__LINE, p->size);
    /* Mostly a few loads and stores (a new chunk and a turn of the returned list are rare):
     * a spin lock, where a mutex took the inserting thread 2 locked instructions and about
     * 90 more a record (bench/host_profile.py). */
    convoy__spin_lock(&p->lock);
    void *r = NULL;
    if (p->carve != p->carve_end)
        r = carve(p);
    if (r == NULL && p->free == NULL)
        take_returned(p);
    if (r == NULL && p->free != NULL) {
        r = p->free;
        p->free = p->free->next;
        if (p->free == NULL)
            p->free_tail = NULL;
    }
    if (r == NULL && (p->carve != p->carve_end || grow(p)))
        r = carve(p);
    convoy__spin_unlock(&p->lock);
    return r;
}

void convoy__pool_put(convoy__pool_t *p, void *r)
{
    if (r == NULL)
        return;
    if (CONVOY__POOL_BYPASS) {
        free(r);
        return;
    }
    convoy__pool_link_t *l = r;
    convoy__pool_link_t *head = atomic_load_explicit(&p->returned, memory_order_relaxed);
    do
        l->next = head;
    while (!atomic_compare_exchange_weak_explicit(&p->returned, &head, l, memory_order_release,
                                                  memory_order_relaxed));
}

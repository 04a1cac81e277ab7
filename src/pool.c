/*
 * Pools of fixed-size records (see pool.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "src/pool.h"

#define FIRST_OBJS 16u /* records in a pool's first chunk; each next one doubles ... */
#define MAX_OBJS 1024u /* ... up to this: 320 KiB of data handles */

void convoy__pool_init(convoy__pool_t *p, size_t size)
{
    p->size = (size + CONVOY__LINE - 1) / CONVOY__LINE * CONVOY__LINE;
    pthread_mutex_init(&p->lock, NULL);
    p->free = NULL;
    p->carve = p->carve_end = NULL;
    p->chunks = NULL;
    p->next_objs = FIRST_OBJS;
    p->carved = 0;
    atomic_init(&p->returned, NULL);
}

void convoy__pool_destroy(convoy__pool_t *p)
{
    if (p == NULL || p->size == 0)
        return;
    for (void *c = p->chunks, *next; c != NULL; c = next) {
        next = *(void **)c;
        free(c);
    }
    p->chunks = NULL;
    p->free = NULL;
    atomic_store(&p->returned, NULL);
    pthread_mutex_destroy(&p->lock);
    p->size = 0;
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

void *convoy__pool_get(convoy__pool_t *p)
{
    if (CONVOY__POOL_BYPASS)
        return aligned_alloc(CONVOY__LINE, p->size);
    pthread_mutex_lock(&p->lock);
    convoy__pool_link_t *r = p->free;
    if (r == NULL)
        r = atomic_exchange_explicit(&p->returned, NULL, memory_order_acquire);
    if (r != NULL) {
        p->free = r->next;
    } else if (p->carve != p->carve_end || grow(p)) {
        r = (convoy__pool_link_t *)p->carve;
        p->carve += p->size;
        p->carved++;
    }
    pthread_mutex_unlock(&p->lock);
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

/*
 * The device block cache of devcache.h.
 */
#include "config.h"

#include <stdlib.h>

#include "device/devcache.h"

void convoy__devcache_init(convoy__devcache_t *c, size_t limit)
{
    *c = (convoy__devcache_t){.limit = limit};
    atomic_init(&c->held, 0);
}

/* The class of bytes, or NULL; with add, an empty class becomes it if there is one. */
static convoy__devcache_class_t *class_of(convoy__devcache_t *c, size_t bytes, int add)
{
    convoy__devcache_class_t *unused = NULL;
    for (int i = 0; i < CONVOY__DEVCACHE_CLASSES; i++) {
        if (c->cls[i].bytes == bytes)
            return &c->cls[i];
        if (c->cls[i].n == 0 && unused == NULL)
            unused = &c->cls[i];
    }
    if (!add || unused == NULL)
        return NULL;
    unused->bytes = bytes;
    return unused;
}

void *convoy__devcache_take(convoy__devcache_t *c, size_t bytes)
{
    convoy__devcache_class_t *k = class_of(c, bytes, 0);
    if (k == NULL || k->n == 0)
        return NULL;
    c->hits++;
    atomic_store_explicit(&c->held, atomic_load_explicit(&c->held, memory_order_relaxed) - bytes,
                          memory_order_relaxed);
    return k->blocks[--k->n];
}

int convoy__devcache_keep(convoy__devcache_t *c, void *ptr, size_t bytes)
{
    size_t held = atomic_load_explicit(&c->held, memory_order_relaxed);
    if (ptr == NULL || bytes == 0 || bytes > CONVOY__DEVCACHE_MAX_BLOCK || held + bytes > c->limit)
        return 0;
    convoy__devcache_class_t *k = class_of(c, bytes, 1);
    if (k == NULL)
        return 0;
    if (k->n == CONVOY__DEVCACHE_MAX_PER_SIZE)
        return 0;
    if (k->n == k->cap) {
        int cap = k->cap ? 2 * k->cap : 256;
        void **b = realloc(k->blocks, (size_t)cap * sizeof(*b));
        if (b == NULL)
            return 0;
        k->blocks = b;
        k->cap = cap;
    }
    k->blocks[k->n++] = ptr;
    atomic_store_explicit(&c->held, held + bytes, memory_order_relaxed);
    return 1;
}

void convoy__devcache_drain(convoy__devcache_t *c, void (*free_fn)(void *arg, void *ptr), void *arg)
{
    if (atomic_load_explicit(&c->held, memory_order_relaxed) == 0)
        return;
    for (int i = 0; i < CONVOY__DEVCACHE_CLASSES; i++) {
        convoy__devcache_class_t *k = &c->cls[i];
        while (k->n > 0)
            free_fn(arg, k->blocks[--k->n]);
    }
    atomic_store_explicit(&c->held, 0, memory_order_relaxed);
}

void convoy__devcache_fini(convoy__devcache_t *c)
{
    for (int i = 0; i < CONVOY__DEVCACHE_CLASSES; i++) {
        free(c->cls[i].blocks);
        c->cls[i] = (convoy__devcache_class_t){0};
    }
}

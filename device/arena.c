/*
 * The range allocator of arena.h.
 *
 * Every region is cut into segments that tile it, kept in address order (prev/next) so
 * that a freed segment merges with free neighbours in O(1). Free segments are also on an
 * unordered free list, newest first, which first fit walks: recently freed blocks of the
 * size just asked are found at once, which is the common case for a task runtime's
 * same-sized flows. Allocated segments are found by address through a hash table.
 */
#include "device/arena.h"

#include <stdlib.h>

typedef struct region region_t;

typedef struct seg {
    char *addr;
    size_t size;
    struct seg *prev, *next;   /* neighbours in address order, NULL at the region's ends */
    struct seg *fprev, *fnext; /* the free list, while free */
    struct seg *hnext;         /* hash chain while allocated; spare-node list when unused */
    region_t *region;
    int free;
} seg_t;

struct region {
    convoy__arena_region_t pub; /* what convoy__arena_region_at shows */
    seg_t *first;               /* lowest segment */
};

struct convoy__arena {
    size_t align;
    region_t **regions; /* sorted by base */
    int nregions, regions_cap;
    seg_t *free_head; /* the free list */
    seg_t **buckets;  /* allocated segments by address */
    size_t nbuckets;  /* a power of two */
    seg_t *spare;     /* recycled nodes */
    size_t in_use, reserved, live;
};

static seg_t *node_get(convoy__arena_t *a)
{
    seg_t *s = a->spare;
    if (s != NULL) {
        a->spare = s->hnext;
        return s;
    }
    return malloc(sizeof(seg_t));
}

static void node_put(convoy__arena_t *a, seg_t *s)
{
    s->hnext = a->spare;
    a->spare = s;
}

static void free_push(convoy__arena_t *a, seg_t *s)
{
    s->free = 1;
    s->fprev = NULL;
    s->fnext = a->free_head;
    if (a->free_head != NULL)
        a->free_head->fprev = s;
    a->free_head = s;
}

static void free_unlink(convoy__arena_t *a, seg_t *s)
{
    if (s->fprev != NULL)
        s->fprev->fnext = s->fnext;
    else
        a->free_head = s->fnext;
    if (s->fnext != NULL)
        s->fnext->fprev = s->fprev;
    s->free = 0;
}

static size_t bucket_of(const convoy__arena_t *a, const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 32) & (a->nbuckets - 1);
}

/* Double the table when it holds more entries than buckets; a failed grow keeps the
 * old table (longer chains, still correct). */
static void hash_grow(convoy__arena_t *a)
{
    size_t n = a->nbuckets * 2;
    seg_t **b = calloc(n, sizeof(*b));
    if (b == NULL)
        return;
    seg_t **old = a->buckets;
    size_t oldn = a->nbuckets;
    a->buckets = b;
    a->nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        for (seg_t *s = old[i], *next; s != NULL; s = next) {
            next = s->hnext;
            size_t k = bucket_of(a, s->addr);
            s->hnext = b[k];
            b[k] = s;
        }
    }
    free(old);
}

convoy__arena_t *convoy__arena_new(size_t align)
{
    if (align == 0 || (align & (align - 1)) != 0)
        return NULL;
    convoy__arena_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    a->align = align;
    a->nbuckets = 256;
    a->buckets = calloc(a->nbuckets, sizeof(*a->buckets));
    if (a->buckets == NULL) {
        free(a);
        return NULL;
    }
    return a;
}

void convoy__arena_destroy(convoy__arena_t *a)
{
    if (a == NULL)
        return;
    for (int i = 0; i < a->nregions; i++) {
        for (seg_t *s = a->regions[i]->first, *next; s != NULL; s = next) {
            next = s->next;
            free(s);
        }
        free(a->regions[i]);
    }
    while (a->spare != NULL) {
        seg_t *s = a->spare;
        a->spare = s->hnext;
        free(s);
    }
    free(a->regions);
    free(a->buckets);
    free(a);
}

int convoy__arena_add(convoy__arena_t *a, void *base, size_t size, void *tag)
{
    size &= ~(a->align - 1);
    if (base == NULL || size == 0)
        return -1;
    if (a->nregions == a->regions_cap) {
        int cap = a->regions_cap ? 2 * a->regions_cap : 8;
        region_t **r = realloc(a->regions, (size_t)cap * sizeof(*r));
        if (r == NULL)
            return -1;
        a->regions = r;
        a->regions_cap = cap;
    }
    region_t *r = calloc(1, sizeof(*r));
    seg_t *s = node_get(a);
    if (r == NULL || s == NULL) {
        free(r);
        if (s != NULL)
            node_put(a, s);
        return -1;
    }
    r->pub = (convoy__arena_region_t){.base = base, .size = size, .tag = tag, .used = 0};
    *s = (seg_t){.addr = base, .size = size, .region = r};
    r->first = s;
    free_push(a, s);
    int k = a->nregions;
    while (k > 0 && (uintptr_t)a->regions[k - 1]->pub.base > (uintptr_t)base) {
        a->regions[k] = a->regions[k - 1];
        k--;
    }
    a->regions[k] = r;
    a->nregions++;
    a->reserved += size;
    return 0;
}

int convoy__arena_remove(convoy__arena_t *a, int i, void **base_p)
{
    if (i < 0 || i >= a->nregions)
        return -1;
    region_t *r = a->regions[i];
    seg_t *s = r->first;
    if (r->pub.used != 0 || s->next != NULL || !s->free)
        return -1;
    free_unlink(a, s);
    node_put(a, s);
    *base_p = r->pub.base;
    a->reserved -= r->pub.size;
    for (int k = i; k + 1 < a->nregions; k++)
        a->regions[k] = a->regions[k + 1];
    a->nregions--;
    free(r);
    return 0;
}

void *convoy__arena_alloc(convoy__arena_t *a, size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - a->align)
        return NULL;
    size_t need = (bytes + a->align - 1) & ~(a->align - 1);
    seg_t *s = a->free_head;
    while (s != NULL && s->size < need)
        s = s->fnext;
    if (s == NULL)
        return NULL;
    if (s->size > need) {
        /* The remainder takes s's place on the free list and in address order. */
        seg_t *rest = node_get(a);
        if (rest == NULL)
            return NULL;
        *rest = (seg_t){.addr = s->addr + need,
                        .size = s->size - need,
                        .prev = s,
                        .next = s->next,
                        .fprev = s->fprev,
                        .fnext = s->fnext,
                        .region = s->region,
                        .free = 1};
        if (s->next != NULL)
            s->next->prev = rest;
        s->next = rest;
        if (rest->fprev != NULL)
            rest->fprev->fnext = rest;
        else
            a->free_head = rest;
        if (rest->fnext != NULL)
            rest->fnext->fprev = rest;
        s->size = need;
        s->free = 0;
    } else {
        free_unlink(a, s);
    }
    size_t k = bucket_of(a, s->addr);
    s->hnext = a->buckets[k];
    a->buckets[k] = s;
    s->region->pub.used += need;
    a->in_use += need;
    if (++a->live > a->nbuckets)
        hash_grow(a);
    return s->addr;
}

size_t convoy__arena_free(convoy__arena_t *a, void *ptr)
{
    if (ptr == NULL)
        return 0;
    seg_t **pp = &a->buckets[bucket_of(a, ptr)];
    while (*pp != NULL && (*pp)->addr != (char *)ptr)
        pp = &(*pp)->hnext;
    seg_t *s = *pp;
    if (s == NULL)
        return 0;
    *pp = s->hnext;
    size_t size = s->size;
    s->region->pub.used -= size;
    a->in_use -= size;
    a->live--;

    seg_t *n = s->next;
    if (n != NULL && n->free) {
        s->size += n->size;
        s->next = n->next;
        if (n->next != NULL)
            n->next->prev = s;
        free_unlink(a, n);
        node_put(a, n);
    }
    seg_t *p = s->prev;
    if (p != NULL && p->free) {
        p->size += s->size;
        p->next = s->next;
        if (s->next != NULL)
            s->next->prev = p;
        node_put(a, s);
    } else {
        free_push(a, s);
    }
    return size;
}

const convoy__arena_region_t *convoy__arena_find(const convoy__arena_t *a, const void *ptr,
                                                 size_t bytes)
{
    const char *p = ptr;
    int lo = 0, hi = a->nregions - 1, hit = -1;
    while (lo <= hi) { /* the last region whose base is <= p */
        int mid = lo + (hi - lo) / 2;
        if ((uintptr_t)a->regions[mid]->pub.base <= (uintptr_t)p) {
            hit = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (hit < 0)
        return NULL;
    const convoy__arena_region_t *r = &a->regions[hit]->pub;
    return convoy__arena_region_holds(r, p, bytes) ? r : NULL;
}

int convoy__arena_region_count(const convoy__arena_t *a)
{
    return a->nregions;
}

const convoy__arena_region_t *convoy__arena_region_at(const convoy__arena_t *a, int i)
{
    return i >= 0 && i < a->nregions ? &a->regions[i]->pub : NULL;
}

size_t convoy__arena_in_use(const convoy__arena_t *a)
{
    return a->in_use;
}

size_t convoy__arena_reserved(const convoy__arena_t *a)
{
    return a->reserved;
}

size_t convoy__arena_live(const convoy__arena_t *a)
{
    return a->live;
}

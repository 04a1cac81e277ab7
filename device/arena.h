/*
 * A first-fit range allocator over a few large regions (device-memory chunks, pinned
 * host slabs), with coalescing of free neighbours. Plain C with no vendor calls: under
 * the device-memory pool (devpool.h) and the pinned host slabs (hostslab.h) of the CUDA
 * and HIP components. Internal to convoy.
 *
 * Book-keeping lives in host memory only (the ranges may be device memory that the host
 * cannot touch). Not thread-safe: the owner holds its own lock around every call.
 */
#ifndef CONVOY_ARENA_H
#define CONVOY_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct convoy__arena convoy__arena_t;

/* One region handed to the arena. */
typedef struct convoy__arena_region {
    char *base;  /* as given to convoy__arena_add */
    size_t size; /* bytes */
    void *tag;   /* the owner's (e.g. the device pointer of a mapped slab) */
    size_t used; /* bytes allocated in it, rounded to the alignment */
} convoy__arena_region_t;

/* A new empty arena whose allocations are multiples of align bytes and start on
 * align-byte boundaries (align: a power of two; regions must start aligned). NULL when
 * out of host memory. */
convoy__arena_t *convoy__arena_new(size_t align);

/* Frees the book-keeping (not the regions: see convoy__arena_region_at). Accepts NULL. */
void convoy__arena_destroy(convoy__arena_t *a);

/* Add [base, base + size) as free space; size is rounded down to the alignment. Returns
 * 0, or -1 when out of host memory (the region is then not added). */
int convoy__arena_add(convoy__arena_t *a, void *base, size_t size, void *tag);

/* Take region i (see convoy__arena_region_at) out of the arena when nothing in it is
 * allocated: returns 0 and sets *base_p to its base, for the owner to give back; -1 when
 * it is in use (nothing changes). Later regions move down one index. */
int convoy__arena_remove(convoy__arena_t *a, int i, void **base_p);

/* bytes (> 0) rounded up to the alignment, first fit; NULL when nothing fits (the
 * owner adds a region and tries again) or out of host memory. */
void *convoy__arena_alloc(convoy__arena_t *a, size_t bytes);

/* Free an allocation; returns its (rounded) size, or 0 when ptr is not the start of a
 * live allocation of this arena (nothing is changed then). */
size_t convoy__arena_free(convoy__arena_t *a, void *ptr);

/* The region holding all of [ptr, ptr + bytes), or NULL. O(log regions). */
const convoy__arena_region_t *convoy__arena_find(const convoy__arena_t *a, const void *ptr,
                                                 size_t bytes);

/* 1 when [p, p + bytes) lies in r (r may be NULL: 0). */
static inline int convoy__arena_region_holds(const convoy__arena_region_t *r, const void *p,
                                             size_t bytes)
{
    if (r == NULL || (uintptr_t)p < (uintptr_t)r->base)
        return 0;
    size_t off = (size_t)((uintptr_t)p - (uintptr_t)r->base);
    return off < r->size && bytes <= r->size - off;
}

/* convoy__arena_find that tries *hint first (NULL: none) and makes a found region the
 * hint: a caller walking many ranges that mostly share a region (a submission's copies)
 * skips the search. */
static inline const convoy__arena_region_t *
convoy__arena_find_hinted(const convoy__arena_t *a, const void *p, size_t bytes,
                          const convoy__arena_region_t **hint)
{
    if (convoy__arena_region_holds(*hint, p, bytes))
        return *hint;
    const convoy__arena_region_t *r = convoy__arena_find(a, p, bytes);
    if (r != NULL)
        *hint = r;
    return r;
}

/* Regions by index (0 .. count - 1), in address order, for the owner's teardown. */
int convoy__arena_region_count(const convoy__arena_t *a);
const convoy__arena_region_t *convoy__arena_region_at(const convoy__arena_t *a, int i);

/* Bytes allocated (rounded), bytes of all regions, live allocations. */
size_t convoy__arena_in_use(const convoy__arena_t *a);
size_t convoy__arena_reserved(const convoy__arena_t *a);
size_t convoy__arena_live(const convoy__arena_t *a);

#endif /* CONVOY_ARENA_H */

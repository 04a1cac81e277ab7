/*
 * Freed device buffers kept by size for the next allocation of that size. Internal to
 * convoy; one per accelerator, used by its progress thread only (device/devmem.c).
 *
 * Small flows come and go by the thousand (each datum a program frees gives its copy
 * back, each new one takes one), and each allocation and free through the device's pool
 * cost a lock and several cache misses in the range allocator: 520-620 TSC cycles per
 * new copy on the H200 host, half of all the time a copy's reserve took (doc/results.md,
 * 2026-12-01). Here a block is taken from a stack of its size's class.
 */
#ifndef CONVOY_DEVCACHE_H
#define CONVOY_DEVCACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CONVOY__DEVCACHE_CLASSES 16              /* distinct sizes kept */
#define CONVOY__DEVCACHE_MAX_BLOCK (1024 * 1024) /* larger buffers are few: not kept */
/* Blocks of one size kept at most (a stack of 1 MiB of pointers): 64-byte flows would
 * otherwise need 16M entries to fill a limit of 1 GiB. */
#define CONVOY__DEVCACHE_MAX_PER_SIZE (1 << 17)

typedef struct convoy__devcache_class {
    size_t bytes;  /* every block's size (0: the class is unused) */
    void **blocks; /* a stack: the last freed is the first taken */
    int n, cap;
} convoy__devcache_class_t;

typedef struct convoy__devcache {
    convoy__devcache_class_t cls[CONVOY__DEVCACHE_CLASSES];
    size_t limit;        /* bytes it may hold, counted as asked (0: keeps nothing) */
    _Atomic size_t held; /* bytes it holds (other threads read it: convoy__pipeline_cached_bytes) */
    uint64_t hits;       /* allocations it served */
} convoy__devcache_t;

void convoy__devcache_init(convoy__devcache_t *c, size_t limit);
/* A kept block of exactly bytes, out of the cache; NULL when there is none. */
void *convoy__devcache_take(convoy__devcache_t *c, size_t bytes);
/* Keep ptr, a block of bytes no one uses; 0 when it is not kept (too large, the cache
 * is full, out of host memory for its stack): the caller frees it. */
int convoy__devcache_keep(convoy__devcache_t *c, void *ptr, size_t bytes);
/* Hand every kept block to free_fn (the device's memory is needed for other sizes, or
 * the device closes); the cache is empty after. */
void convoy__devcache_drain(convoy__devcache_t *c, void (*free_fn)(void *arg, void *ptr),
                            void *arg);
/* Free the cache's own stacks (drain it first). */
void convoy__devcache_fini(convoy__devcache_t *c);

#endif /* CONVOY_DEVCACHE_H */

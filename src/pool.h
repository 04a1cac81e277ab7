/*
 * Pools of fixed-size records that one thread makes and another frees: task records and
 * data handles. Internal.
 *
 * Why. The program's thread makes these records and an accelerator's progress thread
 * often frees them (a drop, a task's last reference). Through malloc, each such free
 * takes the lock of the allocating thread's arena while that thread allocates, and the
 * records land at any 16-byte offset, so the few bytes a progress thread reads of a
 * handle span two cache lines, one of them shared with its neighbour's dependency state,
 * which insertions write. On the H200, preloading an allocator that puts these sizes on
 * whole lines and keeps frees per thread ran tiny_tasks 30% faster (doc/results.md,
 * 2026-12-04, "Frees across threads"); these pools do both for the records that matter.
 *
 * How. Each record sits on whole cache lines (its size rounded up to CONVOY__LINE, and
 * line-aligned). Any thread gives a record back by pushing it onto a lock-free list;
 * takers, under the pool's lock, take that whole list at once when their own runs out,
 * and carve new records from chunks that grow by doubling. Memory goes back to the
 * system only when the pool is destroyed (convoy_fini): a pool holds its peak.
 *
 * Records are reused late: new ones are carved while the newest chunk has room, and
 * those given back are reused oldest first. So records made one after the other sit one
 * after the other in memory (the progress thread walks a ring's tasks and handles in
 * that order), and a data handle's address does not come back at the next
 * convoy_data_new: a stale convoy_data_free of a freed handle is still refused (the
 * live-handle check of src/data.c) rather than freeing the handle made since. A pool
 * holds its peak and at most one chunk more.
 *
 * A record never given back is a leak: convoy__pool_destroy counts them, logs an error
 * and leaves the chunks allocated, where a leak checker (tests/failalloc.sh) sees them.
 *
 * Builds with AddressSanitizer bypass the pool (each record is its own allocation), so
 * that a use after free or a leak of a record is still caught.
 */
#ifndef CONVOY_POOL_H
#define CONVOY_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "src/util.h"

/* 1 in builds with AddressSanitizer: each record is its own allocation (see above). */
#if defined(__SANITIZE_ADDRESS__)
#define CONVOY__POOL_BYPASS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONVOY__POOL_BYPASS 1
#endif
#endif
#ifndef CONVOY__POOL_BYPASS
#define CONVOY__POOL_BYPASS 0
#endif

typedef struct convoy__pool_link {
    struct convoy__pool_link *next;
} convoy__pool_link_t;

typedef struct convoy__pool {
    size_t size;                           /* bytes of a record: a multiple of CONVOY__LINE */
    const char *what;                      /* what its records are, for messages ("task records") */
    convoy__spin_t lock;                   /* the taking side: the fields below but returned */
    convoy__pool_link_t *free, *free_tail; /* records given back, taken one by one */
    char *carve, *carve_end;               /* the newest chunk's part not handed out yet */
    void *chunks;                          /* every chunk, linked through its first line */
    size_t next_objs;                      /* records in the next chunk */
    size_t carved; /* records carved in all (a leak check at destroy, tests) */
    /* Given back by any thread; on a line of its own, away from the takers' fields. */
    _Alignas(CONVOY__LINE) _Atomic(convoy__pool_link_t *) returned;
} convoy__pool_t;

/* An empty pool of records of size bytes (rounded up to whole lines), named what. */
void convoy__pool_init(convoy__pool_t *p, size_t size, const char *what);

/* Free every chunk; returns how many records were never given back (0 in builds that
 * bypass the pool), and when there are some, logs it and leaves the chunks allocated. */
size_t convoy__pool_destroy(convoy__pool_t *p);

/* A record of the pool's size, line-aligned, uninitialised; NULL without memory. */
void *convoy__pool_get(convoy__pool_t *p);

/* Give r (from convoy__pool_get of p) back; any thread, no lock. NULL is ignored. */
void convoy__pool_put(convoy__pool_t *p, void *r);

#endif

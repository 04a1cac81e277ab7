/*
 * A gang of host threads that share large memcpy jobs with the thread that posts them:
 * the pinned bounce's copies between pageable memory and its pinned blocks (copies.c,
 * pushout.c), which otherwise run on a device's progress thread alone. Plain C, no
 * vendor calls. Internal to convoy.
 *
 * One poster at a time (the progress thread of one device); helpers sleep between jobs.
 */
#ifndef CONVOY_MEMCPY_GANG_H
#define CONVOY_MEMCPY_GANG_H

#include <stddef.h>

/* One piece of a job. */
typedef struct convoy__span {
    void *dst;
    const void *src;
    size_t bytes;
} convoy__span_t;

typedef struct convoy__gang convoy__gang_t;

/* A gang of nthreads helpers (>= 1) named after what (for messages); NULL when no
 * thread or memory could be had (logged; the caller then copies alone). */
convoy__gang_t *convoy__gang_new(int nthreads, const char *what);

/* Stop and join the helpers, free the gang. Accepts NULL. */
void convoy__gang_free(convoy__gang_t *g);

/*
 * Copy spans[0..n) and return when all are copied: the caller and the helpers take
 * spans in turn. With g NULL, or fewer than min_bytes in all, the caller copies alone
 * (waking helpers costs more than a small job). No two spans may overlap.
 */
void convoy__gang_copy(convoy__gang_t *g, const convoy__span_t *spans, int n, size_t min_bytes);

#endif /* CONVOY_MEMCPY_GANG_H */

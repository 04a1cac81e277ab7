/*
 * A gang of host threads that share large memcpy jobs with the thread that posts them:
 * the pinned bounce's copies between pageable memory and its pinned blocks (copies.c,
 * pushout.c), which otherwise run on a device's progress thread alone. Plain C, no
 * vendor calls. Internal to convoy.
 *
 * One poster at a time (the progress thread of one device). Helpers poll a moment after
 * a job, then sleep; the poster copies too and never waits for a helper to wake.
 */
#ifndef CONVOY_MEMCPY_GANG_H
#define CONVOY_MEMCPY_GANG_H

#include <stddef.h>
#include <stdint.h>

/* One piece of a job. */
typedef struct convoy__span {
    void *dst;
    const void *src;
    size_t bytes;
} convoy__span_t;

typedef struct convoy__gang convoy__gang_t;

/* A gang of nthreads helpers (>= 1) that poll for spin_ns after each job before they
 * sleep, named after what (for messages); NULL when no thread or memory could be had
 * (logged; the caller then copies alone). */
convoy__gang_t *convoy__gang_new(int nthreads, uint64_t spin_ns, const char *what);

/* Stop and join the helpers, free the gang. Accepts NULL. */
void convoy__gang_free(convoy__gang_t *g);

/* A job is expected soon: wake the sleeping helpers and keep every helper polling for
 * up to ns (or until the next job), so that none of them starts it late. Accepts NULL. */
void convoy__gang_prime(convoy__gang_t *g, uint64_t ns);

/*
 * Copy spans[0..n) and return when all are copied: the caller and the helpers awake
 * take spans in turn (a helper still waking joins late or not at all). With g NULL, or fewer than min_bytes in all, the caller copies alone
 * (waking helpers costs more than a small job). No two spans may overlap. Returns 1 when
 * the helpers were asked, 0 when the caller copied alone.
 */
int convoy__gang_copy(convoy__gang_t *g, const convoy__span_t *spans, int n, size_t min_bytes);

#endif /* CONVOY_MEMCPY_GANG_H */

/*
 * The batch scheduler's parts: ring collection (sched_batch.c) and the copy plan
 * (batch_plan.c). Internal to convoy.
 */
#ifndef CONVOY_SCHED_BATCH_H
#define CONVOY_SCHED_BATCH_H

#include "sched/sched.h"

typedef struct convoy__batch_limits {
    int max_tasks;        /* tasks per ring */
    uint64_t max_wait_ns; /* a ring closes this long after its oldest task became ready */
    int idle_close;       /* a ring leaves at once when its device has nothing in flight */
    uint64_t drop_wait_ns; /* a ring of background drops closes this long after its oldest */
    int max_copies;       /* copies per submission */
    size_t max_bytes;     /* bytes per submission */
    size_t split_bytes;   /* copies larger than this travel alone; 0: no split */
} convoy__batch_limits_t;

/* Pack copies into bounded submissions, large ones split out after the small ones. */
void convoy__batch_plan(const convoy__batch_limits_t *lim, const convoy__device_t *dev,
                        convoy__copy_t *copies, int n, convoy__plan_t *plan);

extern const convoy__param_def_t convoy__batch_params[];

#endif /* CONVOY_SCHED_BATCH_H */

/*
 * The scheduler component interface. Internal to convoy.
 *
 * A scheduler owns the ready queues (queue 0 feeds the CPU workers, queue 1 + i the
 * accelerator i), decides which ready tasks travel together as a ring, and plans how
 * a stage's copies are grouped into submissions. It never blocks: the core wakes the
 * queue's consumer after each push and sleeps until the deadline pop() reports.
 * push() and pop() may be called from any thread; the component locks its own state.
 */
#ifndef CONVOY_SCHED_H
#define CONVOY_SCHED_H

#include <stdatomic.h>
#include <stdint.h>

#include "convoy.h"
#include "device/device.h"
#include "src/param.h"

typedef struct convoy__task convoy__task_t;

/* One submission of a plan: copies[first .. first + count) of the planned array. */
typedef struct convoy__submission {
    int first;
    int count;
    size_t bytes;
    int split; /* 1: a large copy sent alone (DESIGN.md: the latency-aware split) */
} convoy__submission_t;

typedef struct convoy__plan {
    convoy__submission_t *subs; /* sized n by the caller: a plan never has more */
    int nsubs;
} convoy__plan_t;

typedef struct convoy__sched_component {
    const char *name;
    int priority;
    const char *doc;
    const convoy__param_def_t *params; /* NULL-name terminated; may be NULL */

    convoy_status_t (*init)(convoy_context_t *ctx, int nqueues, void **state_p);
    void (*fini)(void *state); /* the queues are empty by then */

    /* A task became ready for queue. Returns 1 when the queue's consumer should be woken
     * (the push may let pop() return a ring now, or changes when it should look again),
     * 0 when a sleeping consumer can sleep on until its deadline. */
    int (*push)(void *state, int queue, convoy__task_t *task);
    /* push() for tasks[0..n) (n >= 1), in that order, at once; 1 when push() would have
     * asked for a wake-up for any of them. May be NULL: the core pushes them one by one. */
    int (*push_many)(void *state, int queue, convoy__task_t *const *tasks, int n);
    /*
     * Take up to max tasks that travel together into ring and return how many. Returns
     * 0 when none should leave now; then *deadline_ns_p is the CLOCK_MONOTONIC time at
     * which a ring being collected closes (UINT64_MAX: wait for a push). idle: the
     * consumer has nothing in flight, so a ring held back to fill gains nothing.
     */
    int (*pop)(void *state, int queue, convoy__task_t **ring, int max, uint64_t now_ns,
               int idle, uint64_t *deadline_ns_p);
    /* A program's thread is about to block on tasks (begin 1) or has stopped (begin 0):
     * while any such wait is open, pop() lets every ring being collected leave at once,
     * so that no wait sits out batch_max_wait_us. Calls nest; any thread. May be NULL
     * (a scheduler that never holds tasks back). */
    void (*expedite)(void *state, int begin);
    /* Tasks waiting in queue (for the trace and idle checks), read without the queue's
     * lock, so that a look costs its readers no wait on the pushes and pops. A push's
     * count is visible to a thread that has seen the core's wake-up count that followed
     * the push (convoy__queue_wake; every push to queue 0 bumps it), so 0 then means
     * pop() would find nothing. Above 0 may count a push whose task pop() cannot take
     * yet (the batch scheduler counts a push to queue 0 before its task is queued): a
     * pop then finds nothing, and the wake-up count that follows says to look again. */
    int (*depth)(void *state, int queue);
    /* Where a ready task of the program's runs: 0 for the CPU workers, 1 + i for
     * accelerator i (one with a chore for the task's class). Any thread. */
    int (*place)(void *state, convoy_context_t *ctx, convoy__task_t *task);

    /*
     * Plan one stage's copies (n >= 1) for a device: reorder copies in place and
     * describe the submissions, in the order they are to be issued, in plan.
     */
    void (*plan)(void *state, const convoy__device_t *dev, convoy__copy_t *copies, int n,
                 convoy__plan_t *plan);
} convoy__sched_component_t;

/* depth += n, under the queue's lock (the only writer), as a release for depth()'s
 * readers: a plain store, no locked read-modify-write. (The batch scheduler's queue 0,
 * pushed to without its lock, counts with atomic additions instead.) */
static inline void convoy__sched_depth_add(atomic_int *depth, int n)
{
    atomic_store_explicit(depth, atomic_load_explicit(depth, memory_order_relaxed) + n,
                          memory_order_release);
}

/* Placement both components use (sched/place.c): the accelerator holding most of the
 * task's bytes, then the least loaded (each device publishes its load); the CPUs when
 * no accelerator can take it (no chore, or a flow larger than its memory). */
int convoy__sched_place_locality(void *state, convoy_context_t *ctx, convoy__task_t *task);

extern const convoy__sched_component_t convoy__sched_fifo;
extern const convoy__sched_component_t convoy__sched_batch;

#endif /* CONVOY_SCHED_H */

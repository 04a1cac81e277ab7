/*
 * Task memory: per-thread slabs, carved in the order tasks are created, reused whole.
 *
 * A task is created by the thread that inserts it and freed by whichever thread drops its
 * last reference: a CPU worker, an accelerator's progress thread, the inserting thread.
 * Through malloc, each of those frees went back to the creating thread's arena under its
 * lock (once the freeing thread's own small cache was full), while that thread allocated
 * from it; and the tasks of one burst lay wherever freed memory happened to be. Here a
 * thread carves its tasks one after another from a slab of its own, with no lock and no
 * atomic operation, so the tasks of a ring or a burst lie in the order the progress
 * thread and the workers walk them. A free is one atomic decrement of its slab's count.
 * A slab is retired when it is full (or its thread exits), and the last free of a
 * retired slab hands it to a process-wide list of spare slabs for the next thread that
 * needs one (doc/design.md, "Task memory"). On the H200 host, bench/overhead's chained
 * CPU tasks went from 0.85-1.14 us to 0.37-0.65 us a task; tiny_tasks did not move
 * (doc/results.md, 2026-12-01 night).
 */
#ifndef CONVOY_TASKMEM_H
#define CONVOY_TASKMEM_H

#include <stddef.h>

/* Bytes a slab: under malloc's mapping threshold (128 KiB), so that slabs come from its
 * heap, which keeps them faulted in; each holds about 170 tasks of a few flows. */
#define CONVOY__TASKMEM_SLAB ((size_t)64 << 10)
/* The most one allocation may ask for: room for a task of CONVOY_MAX_FLOWS flows. */
#define CONVOY__TASKMEM_MAX ((size_t)2 << 10)
/* Spare slabs the process keeps at most (16 MiB); past it, a freed slab goes back to
 * malloc, so a burst of a million tasks does not stay held once it is done. */
#define CONVOY__TASKMEM_MAX_SPARE 256

/* Memory for one task, bytes <= CONVOY__TASKMEM_MAX, 8-byte aligned and never sharing a
 * cache line with another allocation; uninitialised. NULL when out of host memory. */
void *convoy__taskmem_get(size_t bytes);
/* Give back memory from convoy__taskmem_get, from any thread. NULL: nothing. */
void convoy__taskmem_put(void *p);
/* Retire the calling thread's slab and give every spare slab back to the system
 * (convoy_fini, once the context's own threads have exited and retired theirs). */
void convoy__taskmem_trim(void);
/* The slab p was carved from, and the spare slabs now held (for tests). */
const void *convoy__taskmem_slab(const void *p);
int convoy__taskmem_spares(void);

#endif

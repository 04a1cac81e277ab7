/*
 * tiny_tasks' chores for GPUs (bench/tiny_tasks_cuda.cu) and the raw-CUDA baselines.
 */
#ifndef CONVOY_BENCH_TINY_TASKS_H
#define CONVOY_BENCH_TINY_TASKS_H

#include "convoy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* o = a + b*c with 3 inputs, else o = the sum of the inputs; every output gets it. */
int tiny_cuda_chore(const convoy_task_view_t *task, void *stream);
/* The same for n tasks in one kernel launch (or a few, for large rings). */
int tiny_cuda_batch_chore(const convoy_task_view_t *const *tasks, int n, void *stream);

/* Raw-CUDA baselines over the same shape of work, timed in seconds; they verify their
 * own results and return a negative time on failure. ring = tasks per batched ring. */
double tiny_raw_per_copy(int tasks, int inputs, int outputs, size_t flow_bytes);
double tiny_raw_ring(int tasks, int inputs, int outputs, size_t flow_bytes, int ring);

#ifdef __cplusplus
}
#endif
#endif /* CONVOY_BENCH_TINY_TASKS_H */

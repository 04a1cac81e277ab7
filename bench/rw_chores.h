/*
 * The read-modify-write chore of bench/chains and bench/evict: every 32-bit word of the
 * task's one RW flow gets the task's argument added. CPU and sim chores are in
 * bench/rw_chores.c, CUDA ones (one kernel per task, or one per ring) in rw_chores_cuda.cu.
 */
#ifndef CONVOY_BENCH_RW_CHORES_H
#define CONVOY_BENCH_RW_CHORES_H

#include <stdint.h>

#include "convoy.h"

#ifdef __cplusplus
extern "C" {
#endif

int rw_cpu_chore(const convoy_task_view_t *task, void *stream);
int rw_cpu_batch_chore(const convoy_task_view_t *const *tasks, int n, void *stream);
int rw_cuda_chore(const convoy_task_view_t *task, void *stream);
int rw_cuda_batch_chore(const convoy_task_view_t *const *tasks, int n, void *stream);

/* A class "name" with one RW flow and the chores this build has, batchable. Exits 1 with
 * convoy's message on failure. */
convoy_class_t *rw_class(convoy_context_t *ctx, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* CONVOY_BENCH_RW_CHORES_H */

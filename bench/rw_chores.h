/*
 * The chores of bench/chains and bench/evict: every 32-bit word of the task's last flow
 * becomes that word of its first flow plus the task's argument. With one RW flow (rw_class)
 * that adds in place; with a READ flow and a WRITE flow (hop_class) it writes the sum to
 * the second. CPU and sim chores are in bench/rw_chores.c, CUDA ones (one kernel per task,
 * or one per ring) in rw_chores_cuda.cu.
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
/* The same with a READ flow and a WRITE flow of the same size. */
convoy_class_t *hop_class(convoy_context_t *ctx, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* CONVOY_BENCH_RW_CHORES_H */

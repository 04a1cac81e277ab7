/*
 * The host device: CPU chores run by the CPU workers. Internal to convoy.
 */
#ifndef CONVOY_DEVICE_HOST_H
#define CONVOY_DEVICE_HOST_H

#include "src/core.h"

/* Run a ring taken from queue 0 on CPU worker `worker`, then complete its tasks. */
void convoy__host_execute(convoy_context_t *ctx, int worker, convoy__task_t **ring, int n);
/* A CPU worker ends: free what host_execute keeps per thread. */
void convoy__host_worker_exit(void);

extern const convoy__device_component_t convoy__device_host;

#endif /* CONVOY_DEVICE_HOST_H */

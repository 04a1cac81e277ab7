/*
 * The accelerator pipeline: one progress thread per accelerator carries rings of tasks
 * through reserve, stage-in, execute and complete, and the internal transfer tasks that
 * bring data home. It takes work only from its scheduler queue and reports only through
 * convoy__task_complete; its load is published in convoy__device_t.load. Internal.
 */
#ifndef CONVOY_PIPELINE_H
#define CONVOY_PIPELINE_H

#include "src/core.h"

/* Create the device's streams and start its progress thread. */
convoy_status_t convoy__pipeline_start(convoy__device_t *dev);
/* Stop the progress thread (every task has completed by then). Accepts a device whose
 * pipeline never started. */
void convoy__pipeline_stop(convoy__device_t *dev);
/* Free the device copies, events and streams. Accepts a device whose pipeline never
 * started. */
void convoy__pipeline_destroy(convoy__device_t *dev);
/* Rings of background drops (convoy_data_free) the device's thread has started: for
 * tests of their collection. */
uint64_t convoy__pipeline_drop_rings(const convoy__device_t *dev);
/* Bytes of freed buffers the device keeps for reuse (device_cache): with the copies of
 * live data, all the device memory convoy holds. */
size_t convoy__pipeline_cached_bytes(const convoy__device_t *dev);

#endif /* CONVOY_PIPELINE_H */

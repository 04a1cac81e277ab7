/*
 * The accelerator pipeline: one progress thread per accelerator carries rings of tasks
 * through reserve, stage-in, execute, pushout and complete. Internal to convoy.
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
/* Free data's copy on dev, if any; no task may be using the datum. Any thread. */
void convoy__pipeline_drop_copy(convoy__device_t *dev, convoy_data_t *data);
/* Tasks queued for or in flight on dev, for placement. Any thread. */
int64_t convoy__pipeline_load(const convoy__device_t *dev);

#endif /* CONVOY_PIPELINE_H */

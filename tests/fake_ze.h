/*
 * The controls of the fake Level Zero loader (tests/fake_ze.c), which tests/check_ze
 * finds with dlsym in the library the dynamic loader gave it as libze_loader.so.1.
 */
#ifndef CONVOY_FAKE_ZE_H
#define CONVOY_FAKE_ZE_H

/* What the fake has seen, and what is still alive. */
typedef struct fake_ze_counts {
    long copies;       /* zeCommandListAppendMemoryCopy calls that succeeded */
    long failed;       /* ... that failed on request */
    long barriers;     /* zeCommandListAppendBarrier */
    long signals;      /* zeCommandListAppendSignalEvent */
    long waits;        /* zeCommandListAppendWaitOnEvents */
    long bad_waits;    /* waits on an event that was never signalled (a bug: they would hang) */
    long host_allocs;  /* zeMemAllocHost */
    long resets;       /* zeEventHostReset */
    long live_objects; /* contexts, lists, pools, events and allocations not yet destroyed */
} fake_ze_counts_t;

/* The number of GPUs the one fake driver has (1 at start). */
typedef void (*fake_ze_set_devices_fn)(int n);
/* From now on, the calls of function fn number first..first+count-1 (1: the next one)
 * fail, with ZE_RESULT_ERROR_DEVICE_LOST (zeMemAllocDevice: ..._OUT_OF_DEVICE_MEMORY,
 * zeMemAllocHost: ..._OUT_OF_HOST_MEMORY); count 0 turns it off. Functions without a
 * fail point (zeEventDestroy, ...) never fail. */
typedef void (*fake_ze_fail_fn)(const char *fn, int first, int count);
typedef void (*fake_ze_get_counts_fn)(fake_ze_counts_t *c);
/* 1 when h is a command list of the fake. */
typedef int (*fake_ze_is_list_fn)(const void *h);

#endif /* CONVOY_FAKE_ZE_H */

/*
 * The Level Zero device component's internal header. Plain C against
 * <level_zero/ze_api.h> (Debian 12's libze-dev: loader 1.8.12, API 1.4), linked with
 * -lze_loader. Internal to device/ze/. It has run on no Intel GPU (doc/level-zero.md):
 * what runs without a driver is tested against a fake loader (tests/fake_ze.c).
 *
 *   device_ze.c   the component alone: its table, query, open, close
 *   ze_params.c   its parameters (ze_params.h: no Level Zero header, part of libconvoy
 *                 even when the component is a module)
 *   ze_err.c      the slow path of CONVOY_ZE_CALL, result names
 *   ze_driver.c   the driver, its GPUs and the one Level Zero context they share
 *   ze_mem.c      device memory: zeMemAllocDevice chunks under the pool of devpool.h
 *   ze_event.c    events: Level Zero events from event pools, and their reuse
 *   ze_stream.c   streams (one immediate command list each), waits, sync, launches
 *   ze_copy.c     memcpy and memcpy_multi (loop, and the batch between two barriers)
 *   ze_hostmem.c  pinned host slabs (convoy_host_alloc) from zeMemAllocHost
 *
 * Stream order: Level Zero runs the commands of a command list in any order unless a
 * barrier or an event separates them, while device.h's streams run their operations in
 * order. So every operation on a stream starts with a barrier when commands were
 * appended since the last one (convoy__ze_order): each operation runs after the ones
 * before it, and the commands within one operation (the copies of one batch, a chore's
 * kernels) may overlap.
 */
#ifndef CONVOY_ZE_DEV_H
#define CONVOY_ZE_DEV_H

#include <stddef.h>

#include <level_zero/ze_api.h>

#include "device/copyargs.h"
#include "device/device.h"
#include "device/devpool.h"
#include "device/hostslab.h"
#include "device/ze/ze_params.h"
#include "src/util.h"

extern const convoy__device_component_t convoy__device_ze;

/* ---- errors (ze_err.c) -------------------------------------------------------------- */

/* "ZE_RESULT_ERROR_DEVICE_LOST", or "an unknown ze_result_t". */
const char *convoy__ze_result_name(ze_result_t rc);

/* The slow path of CONVOY_ZE_CALL: record CONVOY_ERR_DEVICE with "WHERE: CALL failed:
 * NAME (0xCODE)". */
convoy_status_t convoy__ze_fail(ze_result_t rc, const char *call, convoy_context_t *ctx,
                                const char *where);

static inline convoy_status_t convoy__ze_check(ze_result_t rc, const char *call,
                                               convoy_context_t *ctx, const char *where)
{
    if (CONVOY__LIKELY(rc == ZE_RESULT_SUCCESS))
        return CONVOY_SUCCESS;
    return convoy__ze_fail(rc, call, ctx, where);
}

/* Wrap every Level Zero call: CONVOY_SUCCESS, or CONVOY_ERR_DEVICE recorded with the
 * call's text, the result's name and WHERE ("ze0", or "ze"). */
#define CONVOY_ZE_CALL(ctx, where, call) convoy__ze_check((call), #call, (ctx), (where))

/* ---- the driver (ze_driver.c) ------------------------------------------------------- */

/* zeInit, then the GPUs of the first driver that has any: their number (0 with the
 * reason in why when none), and device `index` of them in *device_p when index >= 0
 * and device_p is not NULL. Creates no Level Zero context (device.h: query must leave
 * the process able to fork). */
int convoy__ze_find(int index, ze_driver_handle_t *driver_p, ze_device_handle_t *device_p,
                    char *why, size_t why_len);

/* The Level Zero context of the driver, shared by every open device of the process and
 * by the pinned slabs: acquire creates it on first use (errors recorded in ctx), release
 * destroys it with the last reference. convoy__ze_context() is the current one (NULL
 * when no device holds it). */
convoy_status_t convoy__ze_context_acquire(convoy_context_t *ctx, ze_driver_handle_t driver,
                                           ze_context_handle_t *zctx_p);
void convoy__ze_context_release(void);
ze_context_handle_t convoy__ze_context(void);

/* ---- the device --------------------------------------------------------------------- */

typedef struct convoy__ze_slot convoy__ze_slot_t;
typedef struct convoy__ze_pool convoy__ze_pool_t;

typedef struct convoy__ze_dev {
    convoy__device_t base;       /* first: what the pipeline sees */
    ze_driver_handle_t driver;   /* the driver the device belongs to */
    ze_device_handle_t device;   /* the Level Zero device */
    ze_context_handle_t zctx;    /* the shared context (convoy__ze_context_acquire) */
    uint32_t ordinal;            /* the compute command queue group of the device */
    convoy__devpool_t pool;      /* device memory: zeMemAllocDevice chunks (ze_mem.c) */
    convoy__hostslab_t *hostmem; /* the context's pinned slabs (ze_hostmem.c) */
    convoy__ze_pool_t *pools;    /* the event pools, newest first (ze_event.c) */
    convoy__ze_slot_t *free;     /* Level Zero events ready to be signalled */
    convoy__ze_slot_t *retired;  /* events that a wait may still read (ze_event.c) */
} convoy__ze_dev_t;

static inline convoy__ze_dev_t *convoy__ze_dev(convoy__device_t *d)
{
    return (convoy__ze_dev_t *)d;
}

/* A stream: one immediate command list. */
typedef struct convoy__ze_stream {
    ze_command_list_handle_t list;
    int unordered; /* commands were appended since the last barrier */
} convoy__ze_stream_t;

static inline convoy__ze_stream_t *convoy__ze_stream(convoy__stream_t *s)
{
    return (convoy__ze_stream_t *)(void *)s;
}

/* Make the next command of s run after every command appended to s so far (a barrier,
 * when any was appended since the last one). */
convoy_status_t convoy__ze_order(convoy__ze_dev_t *dev, convoy__ze_stream_t *s);

/* ---- memory (ze_mem.c, ze_hostmem.c) ------------------------------------------------ */

extern const convoy__devpool_ops_t convoy__ze_pool_ops;
extern const convoy__hostslab_ops_t convoy__ze_hostslab_ops;
extern const convoy__host_mem_ops_t convoy__ze_host_mem_ops;

convoy_status_t convoy__ze_mem_alloc(convoy__device_t *d, size_t bytes, void **ptr_p);
void convoy__ze_mem_free(convoy__device_t *d, void *ptr);

/* ---- events (ze_event.c) ------------------------------------------------------------ */

convoy_status_t convoy__ze_event_create(convoy__device_t *d, convoy__event_t **event_p);
void convoy__ze_event_destroy(convoy__device_t *d, convoy__event_t *event);
convoy_status_t convoy__ze_event_record(convoy__device_t *d, convoy__event_t *event,
                                        convoy__stream_t *stream);
int convoy__ze_event_query(convoy__device_t *d, convoy__event_t *event);
convoy_status_t convoy__ze_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                             convoy__event_t *event);
/* Signal a fresh event on s and wait for it on the host (stream_sync). */
convoy_status_t convoy__ze_signal_and_wait(convoy__ze_dev_t *dev, convoy__ze_stream_t *s);
/* Destroy every event and event pool of the device (close, once no stream is left). */
void convoy__ze_events_fini(convoy__ze_dev_t *dev);

/* ---- streams, launches (ze_stream.c) ------------------------------------------------ */

convoy_status_t convoy__ze_stream_create(convoy__device_t *d, convoy__stream_t **stream_p);
void convoy__ze_stream_destroy(convoy__device_t *d, convoy__stream_t *stream);
void *convoy__ze_stream_native(convoy__device_t *d, convoy__stream_t *stream);
convoy_status_t convoy__ze_stream_sync(convoy__device_t *d, convoy__stream_t *stream);
convoy_status_t convoy__ze_launch(convoy__device_t *d, convoy__stream_t *stream,
                                  convoy__launch_fn fn, void *arg);

/* ---- copies (ze_copy.c) ------------------------------------------------------------- */

convoy_status_t convoy__ze_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                  const convoy__copy_t *copy);
convoy_status_t convoy__ze_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                        const convoy__copy_t *copies, int n, int method,
                                        int *submitted_p, int *method_p);

#endif /* CONVOY_ZE_DEV_H */

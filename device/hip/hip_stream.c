/*
 * Streams, events and launches of a HIP device: the ops the pipeline calls to order work
 * (device.h). Each op makes the device current first (hip_dev.h), except event_query,
 * which the progress thread polls.
 */
#include "config.h"

#include <stdio.h>

#include "device/hip/hip_dev.h"

convoy_status_t convoy__hip_stream_create(convoy__device_t *d, convoy__stream_t **stream_p)
{
    hipStream_t s;
    convoy_status_t st = convoy__hip_enter(convoy__hip_dev(d));
    if (st == CONVOY_SUCCESS)
        st = CONVOY_HIP_CALL(d->ctx, d->name, hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    if (st == CONVOY_SUCCESS)
        *stream_p = (convoy__stream_t *)(void *)s;
    return st;
}

void convoy__hip_stream_destroy(convoy__device_t *d, convoy__stream_t *stream)
{
    if (stream != NULL && convoy__hip_enter(convoy__hip_dev(d)) == CONVOY_SUCCESS)
        CONVOY_HIP_CALL(d->ctx, d->name, hipStreamDestroy((hipStream_t)(void *)stream));
}

void *convoy__hip_stream_native(convoy__device_t *d, convoy__stream_t *stream)
{
    (void)d;
    return (void *)stream;
}

convoy_status_t convoy__hip_event_create(convoy__device_t *d, convoy__event_t **event_p)
{
    hipEvent_t e;
    convoy_status_t st = convoy__hip_enter(convoy__hip_dev(d));
    if (st == CONVOY_SUCCESS)
        st = CONVOY_HIP_CALL(d->ctx, d->name, hipEventCreateWithFlags(&e, hipEventDisableTiming));
    if (st == CONVOY_SUCCESS)
        *event_p = (convoy__event_t *)(void *)e;
    return st;
}

void convoy__hip_event_destroy(convoy__device_t *d, convoy__event_t *event)
{
    if (event != NULL && convoy__hip_enter(convoy__hip_dev(d)) == CONVOY_SUCCESS)
        CONVOY_HIP_CALL(d->ctx, d->name, hipEventDestroy((hipEvent_t)(void *)event));
}

convoy_status_t convoy__hip_event_record(convoy__device_t *d, convoy__event_t *event,
                                         convoy__stream_t *stream)
{
    convoy_status_t st = convoy__hip_enter(convoy__hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(d->ctx, d->name,
                           hipEventRecord((hipEvent_t)(void *)event, (hipStream_t)(void *)stream));
}

/* Polled often: no hipSetDevice. NotReady is not an error. */
int convoy__hip_event_query(convoy__device_t *d, convoy__event_t *event)
{
    hipError_t rc = hipEventQuery((hipEvent_t)(void *)event);
    if (rc == hipSuccess)
        return 1;
    if (rc == hipErrorNotReady)
        return 0;
    return (int)CONVOY_HIP_CALL(d->ctx, d->name, rc);
}

/* The pipeline's last resort when no event can be recorded (pipeline.c). */
convoy_status_t convoy__hip_stream_sync(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy_status_t st = convoy__hip_enter(convoy__hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(d->ctx, d->name, hipStreamSynchronize((hipStream_t)(void *)stream));
}

convoy_status_t convoy__hip_stream_wait_event(convoy__device_t *d, convoy__stream_t *stream,
                                              convoy__event_t *event)
{
    convoy_status_t st = convoy__hip_enter(convoy__hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(
        d->ctx, d->name,
        hipStreamWaitEvent((hipStream_t)(void *)stream, (hipEvent_t)(void *)event, 0));
}

/* launch_inline, as on CUDA: fn runs now; launch fails only when HIP reports an error
 * after it. */
convoy_status_t convoy__hip_launch(convoy__device_t *d, convoy__stream_t *stream,
                                   convoy__launch_fn fn, void *arg)
{
    if (fn == NULL || stream == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: launch: NULL %s", d->name,
                             fn == NULL ? "fn" : "stream");
    convoy_status_t st = convoy__hip_enter(convoy__hip_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    hipError_t stale = hipGetLastError();
    if (stale != hipSuccess && convoy__hip_is_sticky(stale))
        return CONVOY_HIP_CALL(d->ctx, d->name, stale);
    int rc = fn(arg, (void *)stream);
    st = CONVOY_HIP_CALL(d->ctx, d->name, hipGetLastError());
    if (st != CONVOY_SUCCESS) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        return convoy__error(d->ctx, st, "%s (after a chore that returned %d)", msg, rc);
    }
    return CONVOY_SUCCESS;
}

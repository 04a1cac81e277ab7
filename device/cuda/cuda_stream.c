/*
 * Streams, events and launches of a CUDA device: the ops the pipeline calls to order
 * work (device.h). Each op makes the device current first (cuda_dev.h), except
 * event_query, which the progress thread polls.
 */
#include "config.h"

#include <stdio.h>

#include "device/cuda/cuda_dev.h"

convoy_status_t convoy__cuda_stream_create(convoy__device_t *d, convoy__stream_t **stream_p)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    cudaStream_t s;
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st == CONVOY_SUCCESS)
        st =
            CONVOY_CUDA_CALL(d->ctx, d->name, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (st == CONVOY_SUCCESS)
        *stream_p = (convoy__stream_t *)(void *)s;
    return st;
}

/* The work already enqueued still runs (CUDA frees the stream when it is done). */
void convoy__cuda_stream_destroy(convoy__device_t *d, convoy__stream_t *stream)
{
    if (stream == NULL)
        return;
    convoy__cuda_copy_forget_stream(convoy__cuda_dev(d), convoy__cuda_stream(stream));
    if (convoy__cuda_enter(convoy__cuda_dev(d)) == CONVOY_SUCCESS)
        CONVOY_CUDA_CALL(d->ctx, d->name, cudaStreamDestroy(convoy__cuda_stream(stream)));
}

void *convoy__cuda_stream_native(convoy__device_t *d, convoy__stream_t *stream)
{
    (void)d;
    return (void *)convoy__cuda_stream(stream);
}

/* The pipeline's last resort when no event can be recorded (pipeline.c). */
convoy_status_t convoy__cuda_stream_sync(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy_status_t st = convoy__cuda_enter(convoy__cuda_dev(d));
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_CUDA_CALL(d->ctx, d->name, cudaStreamSynchronize(convoy__cuda_stream(stream)));
}

/*
 * launch_inline: fn runs now, on this thread, and enqueues its kernels into the stream.
 * Its return value is the chore's own verdict, which the pipeline reads from the record
 * fn fills in; launch itself fails only when CUDA reports an error after fn (a kernel
 * that could not be launched), or a sticky error from before it.
 */
convoy_status_t convoy__cuda_launch(convoy__device_t *d, convoy__stream_t *stream,
                                    convoy__launch_fn fn, void *arg)
{
    convoy__cuda_dev_t *dev = convoy__cuda_dev(d);
    if (fn == NULL || stream == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: launch: NULL %s", d->name,
                             fn == NULL ? "fn" : "stream");
    convoy_status_t st = convoy__cuda_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    /* Start from a clean last error, so that what we read after fn is fn's. */
    cudaError_t stale = cudaGetLastError();
    if (stale != cudaSuccess && convoy__cuda_is_sticky(stale))
        return CONVOY_CUDA_CALL(d->ctx, d->name, stale);
    nvtxRangePushA("convoy launch");
    int rc = fn(arg, (void *)convoy__cuda_stream(stream));
    nvtxRangePop();
    st = CONVOY_CUDA_CALL(d->ctx, d->name, cudaGetLastError());
    if (st != CONVOY_SUCCESS) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        return convoy__error(d->ctx, st, "%s (after a chore that returned %d)", msg, rc);
    }
    return CONVOY_SUCCESS;
}

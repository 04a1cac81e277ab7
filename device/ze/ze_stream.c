/*
 * Streams and launches of a Level Zero device: a stream is one immediate command list
 * (zeCommandListCreateImmediate) on the device's compute queue group, kept in stream
 * order by barriers (ze_dev.h says why). Events and waits are in ze_event.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "device/ze/ze_dev.h"

convoy_status_t convoy__ze_order(convoy__ze_dev_t *dev, convoy__ze_stream_t *s)
{
    if (!s->unordered)
        return CONVOY_SUCCESS;
    convoy_status_t st = CONVOY_ZE_CALL(dev->base.ctx, dev->base.name,
                                        zeCommandListAppendBarrier(s->list, NULL, 0, NULL));
    if (st == CONVOY_SUCCESS)
        s->unordered = 0;
    return st;
}

convoy_status_t convoy__ze_stream_create(convoy__device_t *d, convoy__stream_t **stream_p)
{
    convoy__ze_dev_t *dev = convoy__ze_dev(d);
    convoy__ze_stream_t *s = convoy__calloc(d->ctx, 1, sizeof(*s), "a stream");
    if (s == NULL)
        return CONVOY_ERR_NOMEM;
    ze_command_queue_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                    .ordinal = dev->ordinal,
                                    .index = 0,
                                    .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                    .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    convoy_status_t st = CONVOY_ZE_CALL(
        d->ctx, d->name, zeCommandListCreateImmediate(dev->zctx, dev->device, &desc, &s->list));
    if (st != CONVOY_SUCCESS) {
        free(s);
        return st;
    }
    *stream_p = (convoy__stream_t *)(void *)s;
    return CONVOY_SUCCESS;
}

void convoy__ze_stream_destroy(convoy__device_t *d, convoy__stream_t *stream)
{
    convoy__ze_stream_t *s = convoy__ze_stream(stream);
    if (s == NULL)
        return;
    CONVOY_ZE_CALL(d->ctx, d->name, zeCommandListDestroy(s->list));
    free(s);
}

/* What chores receive: the immediate command list, to append their kernels to. */
void *convoy__ze_stream_native(convoy__device_t *d, convoy__stream_t *stream)
{
    (void)d;
    return (void *)convoy__ze_stream(stream)->list;
}

/* The pipeline's last resort when no event can be recorded (pipeline.c): the 1.4 API
 * has no zeCommandListHostSynchronize, so a signal and zeEventHostSynchronize. */
convoy_status_t convoy__ze_stream_sync(convoy__device_t *d, convoy__stream_t *stream)
{
    return convoy__ze_signal_and_wait(convoy__ze_dev(d), convoy__ze_stream(stream));
}

/* launch_inline, as on CUDA: fn runs now and appends its kernels to the stream's
 * immediate list, after a barrier (so after everything before it on the stream); the
 * kernels of one chore may overlap unless the chore puts barriers between them, as any
 * Level Zero code does. Level Zero has no last-error state to read after the chore: an
 * append that failed inside it is the chore's to report, by its return value. */
convoy_status_t convoy__ze_launch(convoy__device_t *d, convoy__stream_t *stream,
                                  convoy__launch_fn fn, void *arg)
{
    if (fn == NULL || stream == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: launch: NULL %s", d->name,
                             fn == NULL ? "fn" : "stream");
    convoy__ze_stream_t *s = convoy__ze_stream(stream);
    convoy_status_t st = convoy__ze_order(convoy__ze_dev(d), s);
    if (st != CONVOY_SUCCESS)
        return st;
    (void)fn(arg, (void *)s->list);
    s->unordered = 1;
    return CONVOY_SUCCESS;
}

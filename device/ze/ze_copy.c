/*
 * Copies on a Level Zero device: memcpy, and memcpy_multi with its methods (device.h):
 *
 *   loop    the copies one after the other: each zeCommandListAppendMemoryCopy after a
 *           barrier, like a stream of single copies.
 *   engine  the native batch: every copy of the submission appended to the stream's
 *           immediate command list after one barrier and with none between them, so
 *           that they may run at once (they are independent, device.h); the next
 *           operation on the stream starts with a barrier (ze_dev.h).
 *
 * Why not a regular command list per submission, executed on a command queue: the
 * stream is an immediate list, so that list would need a command queue of its own per
 * stream, an event before it and one after it to keep it in stream order, and its
 * recycling once the device has run it; the batch between two barriers is the same one
 * group of copies for the device, made of the same appends, with no object to manage.
 *
 * On failure at copy j, copies 0..j-1 are appended (and will run): *submitted_p is j,
 * exact, for both methods.
 */
#include "config.h"

#include <stdio.h>

#include "device/ze/ze_dev.h"

static const char *const dir_names[3] = {"H2D", "D2H", "D2D"};

static convoy_status_t append(convoy__ze_dev_t *dev, convoy__ze_stream_t *s,
                              const convoy__copy_t *c)
{
    convoy__device_t *b = &dev->base;
    convoy_status_t st = CONVOY_ZE_CALL(
        b->ctx, b->name,
        zeCommandListAppendMemoryCopy(s->list, c->dst, c->src, c->bytes, NULL, 0, NULL));
    if (st == CONVOY_SUCCESS)
        s->unordered = 1;
    return st;
}

static convoy_status_t copies(convoy__ze_dev_t *dev, convoy__ze_stream_t *s,
                              const convoy__copy_t *cp, int n, int batch, int *done_p)
{
    convoy__device_t *b = &dev->base;
    *done_p = 0;
    for (int i = 0; i < n; i++) {
        convoy_status_t st = CONVOY_SUCCESS;
        if (i == 0 || !batch)
            st = convoy__ze_order(dev, s);
        if (st == CONVOY_SUCCESS)
            st = append(dev, s, &cp[i]);
        if (st != CONVOY_SUCCESS) {
            *done_p = i;
            char msg[640];
            snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
            return convoy__error(b->ctx, st, "%s [memcpy_multi %s, copy %d of %d: %s of %zu bytes]",
                                 msg, batch ? "engine" : "loop", i, n, dir_names[cp[i].dir],
                                 cp[i].bytes);
        }
    }
    *done_p = n;
    return CONVOY_SUCCESS;
}

convoy_status_t convoy__ze_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                  const convoy__copy_t *copy)
{
    convoy__ze_dev_t *dev = convoy__ze_dev(d);
    convoy_status_t st = convoy__copyargs_check(d, "memcpy", stream, copy, 1);
    if (st == CONVOY_SUCCESS)
        st = convoy__ze_order(dev, convoy__ze_stream(stream));
    if (st == CONVOY_SUCCESS)
        st = append(dev, convoy__ze_stream(stream), copy);
    return st;
}

/* See device.h; *submitted_p is set in every case (0 on a validation error). auto is
 * the batch for more than one copy. */
convoy_status_t convoy__ze_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                        const convoy__copy_t *cp, int n, int method,
                                        int *submitted_p, int *method_p)
{
    int done = 0;
    if (submitted_p != NULL)
        *submitted_p = 0;
    convoy_status_t st = convoy__copyargs_check(d, "memcpy_multi", stream, cp, n);
    if (st == CONVOY_SUCCESS && method >= 0 &&
        (method >= CONVOY__METHOD_COUNT || !((d->methods >> method) & 1u)))
        st = convoy__error(d->ctx, CONVOY_ERR_INVALID,
                           "%s: memcpy_multi: method %d (%s) is not offered by this device "
                           "(Level Zero has loop and engine)",
                           d->name, method,
                           method < CONVOY__METHOD_COUNT ? convoy__copy_method_name(method)
                                                         : "unknown");
    if (st != CONVOY_SUCCESS)
        return st;
    int used = method >= 0 ? method : n > 1 ? CONVOY__METHOD_ENGINE : CONVOY__METHOD_LOOP;
    st = copies(convoy__ze_dev(d), convoy__ze_stream(stream), cp, n, used == CONVOY__METHOD_ENGINE,
                &done);
    if (submitted_p != NULL)
        *submitted_p = done;
    if (st == CONVOY_SUCCESS && method_p != NULL)
        *method_p = used;
    return st;
}

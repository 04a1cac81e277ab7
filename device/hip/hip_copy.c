/*
 * Copies on a HIP device: memcpy, and memcpy_multi with its methods (device.h):
 *
 *   loop    one hipMemcpyAsync per copy; on failure at copy j, j copies were enqueued.
 *   engine  one hipMemcpyBatchAsync, where the runtime has it (ROCm 7.1 and later).
 *
 * There is no SM copy kernel: that would need hipcc.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "device/hip/hip_dev.h"

static const char *const dir_names[3] = {"H2D", "D2H", "D2D"};

static hipMemcpyKind kind_of(int dir)
{
    return dir == CONVOY__H2D   ? hipMemcpyHostToDevice
           : dir == CONVOY__D2H ? hipMemcpyDeviceToHost
                                : hipMemcpyDeviceToDevice;
}

static convoy_status_t copy_loop(convoy__hip_dev_t *dev, hipStream_t s,
                                 const convoy__copy_t *copies, int n, int *done_p)
{
    convoy__device_t *b = &dev->base;
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        convoy_status_t st = CONVOY_HIP_CALL(
            b->ctx, b->name, hipMemcpyAsync(c->dst, c->src, c->bytes, kind_of(c->dir), s));
        if (st != CONVOY_SUCCESS) {
            *done_p = i;
            char msg[640];
            snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
            return convoy__error(b->ctx, st,
                                 "%s [memcpy_multi loop, copy %d of %d: %s of %zu bytes]", msg, i,
                                 n, dir_names[c->dir], c->bytes);
        }
    }
    *done_p = n;
    return CONVOY_SUCCESS;
}

#if CONVOY_HAVE_HIP_BATCH
/*
 * One hipMemcpyBatchAsync (ROCm 7.1 and later, the CUDA 12.8 form with failIdx). One
 * attribute asks for stream-ordered source reads; ROCm 7.2 rejects any attribute with
 * hipErrorNotSupported (and then carries a batch as an internal per-copy loop), so on
 * that answer the call is repeated without attributes, which is stream order there, and
 * later calls pass none. failIdx names the failing copy; the ones before it are enqueued.
 */
static convoy_status_t copy_engine(convoy__hip_dev_t *dev, hipStream_t s,
                                   const convoy__copy_t *copies, int n, int *done_p)
{
    convoy__device_t *b = &dev->base;
    *done_p = 0;
    convoy_status_t st = convoy__copyargs_set(&dev->eng, b, copies, n);
    if (st != CONVOY_SUCCESS)
        return st;
    hipMemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = hipMemcpySrcAccessOrderStream;
    size_t attr_idx = 0, fail_idx = SIZE_MAX;
    hipError_t rc = hipErrorNotSupported;
    if (!dev->eng_no_attrs) {
        rc = hipMemcpyBatchAsync((void *)dev->eng.dsts, (void *)dev->eng.srcs,
                                 (void *)dev->eng.sizes, (size_t)n, &attr, &attr_idx, 1, &fail_idx,
                                 s);
        if (rc == hipErrorNotSupported) {
            (void)hipGetLastError();
            dev->eng_no_attrs = 1;
            convoy__log_info("%s: hipMemcpyBatchAsync takes no attributes here; passing none",
                             b->name);
        }
    }
    if (dev->eng_no_attrs) {
        fail_idx = SIZE_MAX;
        rc = hipMemcpyBatchAsync((void *)dev->eng.dsts, (void *)dev->eng.srcs,
                                 (void *)dev->eng.sizes, (size_t)n, NULL, NULL, 0, &fail_idx, s);
    }
    st = CONVOY_HIP_CALL(b->ctx, b->name, rc);
    if (st == CONVOY_SUCCESS) {
        *done_p = n;
        return CONVOY_SUCCESS;
    }
    if (fail_idx < (size_t)n)
        *done_p = (int)fail_idx;
    char msg[640];
    snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
    return convoy__error(b->ctx, st, "%s [memcpy_multi engine of %d copies, failed at %d]", msg, n,
                         *done_p);
}
#endif

/* auto: pageable device-to-host copies one call each (batching them is 2.5-4x slower,
 * PHYSICS.md s2); a single copy alone; else the batch call where the runtime has it. */
static int auto_method(const convoy__hip_dev_t *dev, int n, const convoy__copy_summary_t *sum)
{
    if (sum->pageable_d2h > 0 || n == 1)
        return CONVOY__METHOD_LOOP;
    return (dev->base.methods >> CONVOY__METHOD_ENGINE) & 1u ? CONVOY__METHOD_ENGINE
                                                             : CONVOY__METHOD_LOOP;
}

convoy_status_t convoy__hip_memcpy(convoy__device_t *d, convoy__stream_t *stream,
                                   const convoy__copy_t *copy)
{
    convoy__hip_dev_t *dev = convoy__hip_dev(d);
    convoy_status_t st = convoy__copyargs_check(d, "memcpy", stream, copy, 1);
    if (st == CONVOY_SUCCESS)
        st = convoy__hip_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    return CONVOY_HIP_CALL(d->ctx, d->name,
                           hipMemcpyAsync(copy->dst, copy->src, copy->bytes, kind_of(copy->dir),
                                          (hipStream_t)(void *)stream));
}

/* See device.h; *submitted_p is set in every case (0 on a validation error). */
convoy_status_t convoy__hip_memcpy_multi(convoy__device_t *d, convoy__stream_t *stream,
                                         const convoy__copy_t *copies, int n, int method,
                                         int *submitted_p, int *method_p)
{
    convoy__hip_dev_t *dev = convoy__hip_dev(d);
    int done = 0;
    if (submitted_p != NULL)
        *submitted_p = 0;
    convoy__copy_summary_t sum;
    convoy_status_t st = convoy__copyargs_scan(d, "memcpy_multi", stream, copies, n, &sum);
    if (st == CONVOY_SUCCESS && method >= 0 &&
        (method >= CONVOY__METHOD_COUNT || !((d->methods >> method) & 1u)))
        st = convoy__error(d->ctx, CONVOY_ERR_INVALID,
                           "%s: memcpy_multi: method %d (%s) is not offered by this device "
                           "(HIP has loop%s)",
                           d->name, method,
                           method < CONVOY__METHOD_COUNT ? convoy__copy_method_name(method)
                                                         : "unknown",
                           (d->methods >> CONVOY__METHOD_ENGINE) & 1u ? " and engine" : "");
    if (st == CONVOY_SUCCESS)
        st = convoy__hip_enter(dev);
    if (st != CONVOY_SUCCESS)
        return st;
    hipStream_t s = (hipStream_t)(void *)stream;
    int used = method >= 0 ? method : auto_method(dev, n, &sum);
#if CONVOY_HAVE_HIP_BATCH
    if (used == CONVOY__METHOD_ENGINE) {
        pthread_mutex_lock(&dev->eng_lock);
        st = copy_engine(dev, s, copies, n, &done);
        pthread_mutex_unlock(&dev->eng_lock);
    } else
#endif
        st = copy_loop(dev, s, copies, n, &done);
    if (submitted_p != NULL)
        *submitted_p = done;
    if (st == CONVOY_SUCCESS && method_p != NULL)
        *method_p = used;
    return st;
}

void convoy__hip_copy_init(convoy__hip_dev_t *dev)
{
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_init(&dev->eng_lock, NULL);
#else
    (void)dev;
#endif
}

void convoy__hip_copy_fini(convoy__hip_dev_t *dev)
{
#if CONVOY_HAVE_HIP_BATCH
    pthread_mutex_destroy(&dev->eng_lock);
    convoy__copyargs_fini(&dev->eng);
#else
    (void)dev;
#endif
}

/*
 * The arguments of copies, for every device component: the checks of what the pipeline
 * passes to memcpy and memcpy_multi, and the arrays a batched copy call of a vendor
 * runtime takes (cudaMemcpyBatchAsync, hipMemcpyBatchAsync). Plain C. Internal to convoy.
 */
#ifndef CONVOY_COPYARGS_H
#define CONVOY_COPYARGS_H

#include <stddef.h>

#include "device/device.h"

/* What a device's choice of method needs to know of a submission, gathered by the
 * check's own pass over it (a second pass costs about 1 ns a copy on the H200 host). */
typedef struct convoy__copy_summary {
    size_t bytes;     /* of all the copies */
    int pageable;     /* copies with a host side not flagged pinned */
    int pageable_d2h; /* ... of them device to host */
} convoy__copy_summary_t;

/* Check a memcpy (n = 1) or memcpy_multi call of d, WHAT naming it in messages: copies
 * not NULL, n within 1..max_batch, every copy with both pointers, bytes > 0 and a known
 * dir, and a stream. CONVOY_SUCCESS, or CONVOY_ERR_INVALID recorded ("cuda0: memcpy_multi:
 * copy 3: ...") for the first thing wrong. On success, *sum (when not NULL) describes the
 * copies. */
convoy_status_t convoy__copyargs_scan(convoy__device_t *d, const char *what,
                                      convoy__stream_t *stream, const convoy__copy_t *copies, int n,
                                      convoy__copy_summary_t *sum);

/* convoy__copyargs_scan without the summary. */
static inline convoy_status_t convoy__copyargs_check(convoy__device_t *d, const char *what,
                                                     convoy__stream_t *stream,
                                                     const convoy__copy_t *copies, int n)
{
    return convoy__copyargs_scan(d, what, stream, copies, n, NULL);
}

/* The arrays of one batched copy call, reused from call to call (zeroed: empty). */
typedef struct convoy__copyargs {
    void **dsts;
    const void **srcs;
    size_t *sizes;
    int cap; /* entries each of the three holds */
} convoy__copyargs_t;

/* Fill the arrays from copies[0..n), growing them first as needed. CONVOY_ERR_NOMEM
 * recorded for d's memcpy_multi engine when out of host memory: the arrays that grew are
 * kept, and cap still holds for all three. */
convoy_status_t convoy__copyargs_set(convoy__copyargs_t *a, convoy__device_t *d,
                                     const convoy__copy_t *copies, int n);
/* Free the arrays. */
void convoy__copyargs_fini(convoy__copyargs_t *a);

#endif /* CONVOY_COPYARGS_H */

/*
 * The arguments of copies (copyargs.h).
 */
#include "config.h"

#include <stdlib.h>

#include "device/copyargs.h"
#include "src/util.h"

convoy_status_t convoy__copyargs_scan(convoy__device_t *d, const char *what,
                                      convoy__stream_t *stream, const convoy__copy_t *copies, int n,
                                      convoy__copy_summary_t *sum)
{
    if (copies == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: %s: NULL copies", d->name, what);
    if (n < 1 || n > d->max_batch)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: %s: n = %d is outside 1..%d", d->name,
                             what, n, d->max_batch);
    convoy__copy_summary_t acc = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        const convoy__copy_t *c = &copies[i];
        if (c->dst == NULL || c->src == NULL || c->bytes == 0)
            return convoy__error(d->ctx, CONVOY_ERR_INVALID,
                                 "%s: %s: copy %d: dst %p, src %p, bytes %zu (NULL pointers and "
                                 "empty copies are not allowed)",
                                 d->name, what, i, c->dst, c->src, c->bytes);
        if (c->dir > CONVOY__D2D)
            return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: %s: copy %d: dir %u is unknown",
                                 d->name, what, i, (unsigned)c->dir);
        int pageable = c->dir != CONVOY__D2D && !(c->flags & CONVOY__COPY_HOST_PINNED);
        acc.bytes += c->bytes;
        acc.pageable += pageable;
        acc.pageable_d2h += pageable && c->dir == CONVOY__D2H;
    }
    if (stream == NULL)
        return convoy__error(d->ctx, CONVOY_ERR_INVALID, "%s: %s: NULL stream", d->name, what);
    if (sum != NULL)
        *sum = acc;
    return CONVOY_SUCCESS;
}

/* Room for n entries in each array; 0, or -1 when out of host memory. */
static int reserve(convoy__copyargs_t *a, int n)
{
    if (n <= a->cap)
        return 0;
    int cap = a->cap ? a->cap : 64;
    while (cap < n)
        cap *= 2;
    void **d = realloc(a->dsts, (size_t)cap * sizeof(*d));
    if (d != NULL)
        a->dsts = d;
    const void **s = realloc(a->srcs, (size_t)cap * sizeof(*s));
    if (s != NULL)
        a->srcs = s;
    size_t *z = realloc(a->sizes, (size_t)cap * sizeof(*z));
    if (z != NULL)
        a->sizes = z;
    if (d == NULL || s == NULL || z == NULL)
        return -1; /* the arrays that grew are kept; cap still holds for all three */
    a->cap = cap;
    return 0;
}

convoy_status_t convoy__copyargs_set(convoy__copyargs_t *a, convoy__device_t *d,
                                     const convoy__copy_t *copies, int n)
{
    if (reserve(a, n) != 0)
        return convoy__error(d->ctx, CONVOY_ERR_NOMEM,
                             "%s: memcpy_multi engine: out of host memory for %d entries", d->name,
                             n);
    for (int i = 0; i < n; i++) {
        a->dsts[i] = copies[i].dst;
        a->srcs[i] = copies[i].src;
        a->sizes[i] = copies[i].bytes;
    }
    return CONVOY_SUCCESS;
}

void convoy__copyargs_fini(convoy__copyargs_t *a)
{
    free(a->dsts);
    free(a->srcs);
    free(a->sizes);
}

/*
 * convoy_host_alloc: pinned memory from the GPU component's slabs when there is one,
 * plain aligned memory otherwise. Plain blocks carry a header linking them into the
 * context's list, so that fini frees what the program did not.
 */
#include "config.h"

#include <stdlib.h>

#include "src/core.h"

typedef struct convoy__hostmem {
    struct convoy__hostmem *prev, *next;
    size_t bytes;
    unsigned char pad[64 - 2 * sizeof(void *) - sizeof(size_t)]; /* keeps user data aligned */
} convoy__hostmem_t;

_Static_assert(sizeof(convoy__hostmem_t) == 64, "host block header must keep 64-byte alignment");

void *convoy_host_alloc(convoy_context_t *ctx, size_t bytes)
{
    if (ctx == NULL || bytes == 0) {
        convoy__error(ctx, CONVOY_ERR_INVALID, "convoy_host_alloc: %s",
                      ctx == NULL ? "ctx is NULL" : "bytes is 0");
        return NULL;
    }
    if (ctx->host_mem != NULL)
        return ctx->host_mem->alloc(ctx, bytes);
    if (bytes > SIZE_MAX - sizeof(convoy__hostmem_t)) {
        convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_host_alloc: %zu bytes is too large", bytes);
        return NULL;
    }
    convoy__hostmem_t *h = NULL;
    if (posix_memalign((void **)&h, 64, sizeof(*h) + bytes) != 0) {
        convoy__error(ctx, CONVOY_ERR_NOMEM, "convoy_host_alloc: out of memory for %zu bytes",
                      bytes);
        return NULL;
    }
    h->bytes = bytes;
    pthread_mutex_lock(&ctx->data_lock);
    h->prev = NULL;
    h->next = ctx->hostmem;
    if (ctx->hostmem != NULL)
        ctx->hostmem->prev = h;
    ctx->hostmem = h;
    pthread_mutex_unlock(&ctx->data_lock);
    return h + 1;
}

void convoy_host_free(convoy_context_t *ctx, void *ptr)
{
    if (ctx == NULL || ptr == NULL)
        return;
    if (ctx->host_mem != NULL) {
        ctx->host_mem->free(ctx, ptr);
        return;
    }
    convoy__hostmem_t *h = (convoy__hostmem_t *)ptr - 1;
    pthread_mutex_lock(&ctx->data_lock);
    if (h->prev != NULL)
        h->prev->next = h->next;
    else
        ctx->hostmem = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&ctx->data_lock);
    free(h);
}

void convoy__hostmem_fini(convoy_context_t *ctx)
{
    while (ctx->hostmem != NULL) {
        convoy__hostmem_t *h = ctx->hostmem;
        ctx->hostmem = h->next;
        free(h);
    }
}

int convoy__host_is_pinned(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    return ctx->host_mem != NULL && ctx->host_mem->is_pinned(ctx, ptr, bytes);
}

void *convoy__host_device_ptr(convoy_context_t *ctx, const void *ptr, size_t bytes)
{
    if (ctx->host_mem == NULL || ctx->host_mem->device_ptr == NULL)
        return NULL;
    return ctx->host_mem->device_ptr(ctx, ptr, bytes);
}

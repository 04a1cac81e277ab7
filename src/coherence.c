/*
 * Coherence: the newest version of each datum and where it lives (see coherence.h).
 */
#include "config.h"

#include <string.h>

#include "src/coherence.h"
#include "src/core.h"

#define PLACE_BITS 8
#define PLACE_MASK ((1u << PLACE_BITS) - 1)

static uint64_t pack(uint64_t version, int dirty_on)
{
    return version << PLACE_BITS | (uint64_t)(dirty_on + 1);
}

uint64_t convoy__coh_version(const convoy_data_t *d)
{
    return atomic_load_explicit(&d->coh, memory_order_acquire) >> PLACE_BITS;
}

int convoy__coh_dirty_on(const convoy_data_t *d)
{
    return (int)(atomic_load_explicit(&d->coh, memory_order_acquire) & PLACE_MASK) - 1;
}

void convoy__coh_get(const convoy_data_t *d, uint64_t *version_p, int *dirty_on_p)
{
    uint64_t w = atomic_load_explicit(&d->coh, memory_order_acquire);
    *version_p = w >> PLACE_BITS;
    *dirty_on_p = (int)(w & PLACE_MASK) - 1;
}

void convoy__coh_commit(convoy_data_t *d, int place)
{
    uint64_t old = atomic_load_explicit(&d->coh, memory_order_acquire), next;
    do {
        next = pack((old >> PLACE_BITS) + 1, place);
    } while (!atomic_compare_exchange_weak_explicit(&d->coh, &old, next, memory_order_acq_rel,
                                                    memory_order_acquire));
    int was_dirty = (old & PLACE_MASK) != 0, dirty = place != CONVOY__COH_HOST;
    if (was_dirty != dirty)
        atomic_fetch_add_explicit(&d->ctx->ndirty, dirty ? 1 : -1, memory_order_acq_rel);
    if (dirty) {
        convoy__coh_set_hint(d, place);
        /* Written only when it changes: a store per commit takes the line from the
         * threads that read its neighbours (waiting, ndirty). */
        if (!atomic_load_explicit(&d->ctx->device_writes, memory_order_relaxed))
            atomic_store_explicit(&d->ctx->device_writes, 1, memory_order_relaxed);
    }
}

int convoy__coh_landed_home(convoy_data_t *d, uint64_t v, int from)
{
    uint64_t expect = pack(v, from);
    if (!atomic_compare_exchange_strong_explicit(&d->coh, &expect, pack(v, CONVOY__COH_HOST),
                                                 memory_order_acq_rel, memory_order_acquire))
        return 0;
    /* Release: a thread that reads the count as 0 (convoy_wait skipping its flush) then
     * sees the bytes that landed. */
    atomic_fetch_sub_explicit(&d->ctx->ndirty, 1, memory_order_acq_rel);
    return 1;
}

int convoy__coh_hint(const convoy_data_t *d)
{
    return atomic_load_explicit(&d->home_hint, memory_order_relaxed) - 1;
}

void convoy__coh_set_hint(convoy_data_t *d, int accel)
{
    atomic_store_explicit(&d->home_hint, accel + 1, memory_order_relaxed);
}

void convoy__coh_clear_hint(convoy_data_t *d, int accel)
{
    int expected = accel + 1;
    atomic_compare_exchange_strong(&d->home_hint, &expected, 0);
}

void convoy__coh_write_failed(convoy_data_t *d)
{
    atomic_fetch_add(&d->failed_writes, 1);
}

int convoy__coh_take_failed(convoy_data_t *d)
{
    return atomic_exchange(&d->failed_writes, 0);
}

int64_t convoy__coh_dirty_count(const convoy_context_t *ctx)
{
    return atomic_load_explicit(&ctx->ndirty, memory_order_acquire);
}

/* A 64-bit hash of the bytes, 8 at a time (collisions only hide a change, never invent
 * one, and the checker is a debugging aid). */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

void convoy__coh_note_host(convoy_data_t *d, uint64_t v)
{
    if (!d->ctx->check_host_writes)
        return;
    atomic_store_explicit(&d->host_hash, hash_bytes(d->host, d->bytes), memory_order_relaxed);
    atomic_store_explicit(&d->host_hash_version, v + 1, memory_order_release);
}

int convoy__coh_host_changed(convoy_data_t *d, uint64_t v)
{
    if (!d->ctx->check_host_writes ||
        atomic_load_explicit(&d->host_hash_version, memory_order_acquire) != v + 1)
        return 0;
    uint64_t dv;
    int dirty_on;
    convoy__coh_get(d, &dv, &dirty_on);
    if (dv != v || dirty_on != CONVOY__COH_HOST)
        return 0;
    return hash_bytes(d->host, d->bytes) !=
           atomic_load_explicit(&d->host_hash, memory_order_relaxed);
}

void convoy__coh_read_home(convoy_data_t *d)
{
    /* Read first: the line stays shared while no write-behind marked it. */
    if (atomic_load_explicit(&d->behind_unread, memory_order_relaxed))
        atomic_store_explicit(&d->behind_unread, 0, memory_order_relaxed);
}

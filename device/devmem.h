/*
 * Device memory of one accelerator: a copy per datum, reader counts and an LRU of the
 * copies no task in flight uses. Copies are always clean when unused (pushout is part
 * of every device task), so eviction frees without copying. Internal to convoy.
 */
#ifndef CONVOY_DEVMEM_H
#define CONVOY_DEVMEM_H

#include <pthread.h>

#include "src/core.h"

#define CONVOY__NO_VERSION UINT64_MAX

struct convoy__pev;

typedef struct convoy__devcopy {
    convoy_data_t *data;
    void *ptr;
    uint64_t version;            /* the datum's version it holds; NO_VERSION: none */
    int users;                   /* ring members in flight that use it */
    int pinned;                  /* kept out of use for good (convoy__devmem_pin) */
    struct convoy__pev *arrival; /* the stage-in bringing it, until seen complete */
    int64_t stage_ring;          /* the ring whose stage-in list holds it, and where */
    int stage_slot;
    struct convoy__devcopy *lru_prev, *lru_next; /* the LRU while users == 0; dm->pinned */
} convoy__devcopy_t;

typedef struct convoy__devmem {
    pthread_mutex_t lock; /* the progress thread and convoy_data_free */
    convoy__device_t *dev;
    convoy__devcopy_t *lru_head, *lru_tail; /* least recently used first */
    convoy__devcopy_t *pinned;              /* kept out of use (lru_next links them) */
    size_t bytes_in_use;
    uint64_t evictions;
} convoy__devmem_t;

void convoy__devmem_init(convoy__devmem_t *dm, convoy__device_t *dev);
/* Free every copy: none in use, and nothing in flight any more (the device's streams
 * are gone), so pinned copies go too. */
void convoy__devmem_fini(convoy__devmem_t *dm);

/*
 * Take data's copy for one more user, allocating it if there is none; on NOMEM, evict
 * unused copies and retry. Returns CONVOY_ERR_NOMEM when even an empty LRU cannot make
 * room (the caller defers or fails the task), or another error from the device.
 */
convoy_status_t convoy__devmem_acquire(convoy__devmem_t *dm, convoy_data_t *data,
                                       convoy__devcopy_t **copy_p);
/* One user less; at zero the copy joins the LRU. */
void convoy__devmem_release(convoy__devmem_t *dm, convoy__devcopy_t *copy);
/* Keep a copy out of use for good: a transfer into or out of it may still be running
 * with no event to tell when it ends, so its memory must never be reused. */
void convoy__devmem_pin(convoy__devmem_t *dm, convoy__devcopy_t *copy);
/* Free data's copy (no user). */
void convoy__devmem_drop(convoy__devmem_t *dm, convoy_data_t *data);

#endif /* CONVOY_DEVMEM_H */

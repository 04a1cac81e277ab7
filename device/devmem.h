/*
 * Device memory of one accelerator: a copy per datum, reader counts, LRUs of the copies
 * no task in flight uses, and eviction. Internal to convoy.
 *
 * With write-back (src/coherence.h) an unused copy may be dirty: the only place holding
 * its datum's newest version. Eviction frees clean copies at once; dirty ones are handed
 * to the pipeline, which pushes them home together and frees them when they land
 * (device/pushout.c). Everything here runs on the device's progress thread only (the
 * trace samples its counters there too), so it takes no lock: a lock around each copy
 * taken and released cost every task of 4 flows 8 lock pairs on the busiest thread.
 */
#ifndef CONVOY_DEVMEM_H
#define CONVOY_DEVMEM_H

#include <pthread.h>

#include "device/devcache.h"
#include "src/core.h"

#define CONVOY__NO_VERSION UINT64_MAX

struct convoy__pev;

typedef struct convoy__devcopy {
    convoy_data_t *data;
    void *ptr;
    uint64_t version;            /* the datum's version it holds; NO_VERSION: none */
    uint64_t writer_id;          /* 1 + the id of the task that wrote it here, 0: staged */
    int users;                   /* ring members in flight that use it */
    int pinned;                  /* kept out of use for good (convoy__devmem_pin) */
    int data_ref;                /* holds a reference on data: it outlived its drop */
    struct convoy__pev *arrival; /* the stage-in bringing it, until seen complete */
    int64_t stage_ring;          /* the ring whose stage-in list holds it, and where */
    int stage_slot;
    struct convoy__pev *out_ev; /* a pushout of it home in flight (flush or eviction); the
                                   pipeline's outbound batch holds the reference */
    uint64_t out_version;       /* the version that pushout carries */
    void *out_ptr;              /* the memory that pushout reads, when a writer's fresh
                                   buffer has replaced it meanwhile: freed as it lands */
    void *bounce;               /* that pushout lands in this pinned block first: copied
                                   into the host memory when it lands, before coherence
                                   learns it (copies.c) */
    int out_failed;             /* the last pushout home failed (the copy stays dirty) */
    unsigned behind_epoch;      /* 1 + ctx->wait_epoch when a pushout written behind last
                                   carried it; 0 once a flush needed it home */
    int evicting;               /* freed when its pushout lands, unless in use again */
    int evict_failures;         /* eviction pushouts of it that failed */
    int lru_list;               /* which LRU holds it while unused: CONVOY__LRU_* */
    struct convoy__devcopy *lru_prev, *lru_next;         /* that LRU while users == 0; dm->pinned */
    struct convoy__devcopy *all_prev, *all_next;         /* every copy of the device: dm->all */
    struct convoy__devcopy *written_prev, *written_next; /* dm->written, while on_written */
    int on_written;
} convoy__devcopy_t;

/* Ask ahead for every line of copy record c, ahead of writes to it (a hint: it never
 * faults). */
static inline void convoy__devcopy_prefetch(const convoy__devcopy_t *c)
{
    convoy__prefetch_w(c, sizeof(*c));
}

/*
 * Unused copies wait in two LRUs, least recently used first. A copy that was clean when it
 * joined stays clean (only a task running here makes it dirty, and that takes it out), so
 * a clean victim is the head of CLEAN: eviction costs O(1) per copy however many dirty
 * copies wait. DIRTY holds those that were dirty (or had a pushout in flight) when they
 * joined; one moves to CLEAN when its pushout lands, or when a walk finds it overwritten
 * elsewhere. One list for both made every allocation walk past all dirty copies: 640
 * tiny tasks/s instead of 280k on sim once 2 GiB of flows met 1 GiB of memory.
 */
enum { CONVOY__LRU_CLEAN, CONVOY__LRU_DIRTY, CONVOY__LRU_LISTS };
#define CONVOY__DEVMEM_SPARES 65536 /* copy records kept for reuse: ~10 MiB at most */

typedef struct convoy__devlru {
    struct convoy__devcopy *head, *tail;
} convoy__devlru_t;

/* A buffer kept out of use for good (convoy__devmem_keep_buffer). */
typedef struct convoy__devkept {
    void *ptr;
    size_t bytes;
    struct convoy__devkept *next;
} convoy__devkept_t;

typedef struct convoy__devmem {
    convoy__device_t *dev;
    convoy__devlru_t lru[CONVOY__LRU_LISTS];
    convoy__devcopy_t *pinned;  /* kept out of use (lru_next links them) */
    convoy__devkept_t *kept;    /* buffers kept out of use, not copies' */
    convoy__devcopy_t *all;     /* every copy (all_next links them) */
    convoy__devcopy_t *written; /* copies a task wrote here since they were last seen
                                   clean: every dirty copy is one (written_next) */
    convoy__devcopy_t *spare;   /* freed copy records, for reuse (all_next) */
    int nspare;                 /* how many (at most CONVOY__DEVMEM_SPARES) */
    convoy__devcache_t cache;   /* freed small buffers, for reuse (devcache.h) */
    size_t bytes_in_use;        /* copies' and buffers' bytes (not the cache's) */
    uint64_t evictions;
} convoy__devmem_t;

/* Device memory of dev, keeping up to cache_bytes of freed buffers for reuse. */
void convoy__devmem_init(convoy__devmem_t *dm, convoy__device_t *dev, size_t cache_bytes);
/* Free every copy: none in use, and nothing in flight any more (the device's streams
 * are gone), so pinned copies go too. */
void convoy__devmem_fini(convoy__devmem_t *dm);

/* Does c hold its datum's newest version, which no other place holds (dirty)? */
int convoy__devmem_dirty(const convoy__devmem_t *dm, const convoy__devcopy_t *c);

/* A task running here wrote c (it may be dirty from now on): a flush-all walks only the
 * copies so noted, not every copy of the device. */
void convoy__devmem_note_written(convoy__devmem_t *dm, convoy__devcopy_t *c);
/* Take c off dm->written: a walk found it clean, with no pushout in flight. */
void convoy__devmem_unnote_written(convoy__devmem_t *dm, convoy__devcopy_t *c);

/*
 * Take data's copy for one more user, allocating it if there is none; on NOMEM, free
 * clean unused copies and retry. Returns CONVOY_ERR_NOMEM when that cannot make room
 * (the caller evicts dirty copies, defers or fails the task), or another device error.
 */
convoy_status_t convoy__devmem_acquire(convoy__devmem_t *dm, convoy_data_t *data,
                                       convoy__devcopy_t **copy_p);
/* data's copy for one more user if there is one (never allocates); NULL when none. */
convoy__devcopy_t *convoy__devmem_lookup(convoy__devmem_t *dm, convoy_data_t *data);
/* One user less; at zero the copy joins the LRU (or is freed, when evicting and its
 * pushout has landed). */
void convoy__devmem_release(convoy__devmem_t *dm, convoy__devcopy_t *copy);
/* A buffer of bytes not tied to a datum (what a task writes when its copy is the only
 * newest version), freeing clean copies for room; CONVOY_ERR_NOMEM like acquire. */
convoy_status_t convoy__devmem_alloc_buffer(convoy__devmem_t *dm, size_t bytes, void **ptr_p);
void convoy__devmem_free_buffer(convoy__devmem_t *dm, void *ptr, size_t bytes);
/* The copy's memory becomes ptr (a buffer from alloc_buffer); its old memory is freed,
 * or, while a pushout home still reads it, kept as out_ptr until that lands. */
void convoy__devmem_replace(convoy__devmem_t *dm, convoy__devcopy_t *copy, void *ptr);
/* The copy's pushout home is over (landed or failed): the memory it read, if a writer
 * replaced it meanwhile, is freed. */
void convoy__devmem_out_over(convoy__devmem_t *dm, convoy__devcopy_t *copy);
/*
 * Take up to max dirty unused copies, least recently used first, until their bytes reach
 * want: they leave the LRU marked evicting, for the caller to push home. Copies whose
 * eviction failed `limit` times are left. Returns how many.
 */
int convoy__devmem_take_dirty(convoy__devmem_t *dm, size_t want, int limit, convoy__devcopy_t **out,
                              int max);
/* A pushout of c has landed (or failed): free it when evicting and unused, else back to
 * the LRU when unused. */
void convoy__devmem_settle(convoy__devmem_t *dm, convoy__devcopy_t *copy);
/* Keep a copy out of use for good: a transfer into or out of it may still be running
 * with no way to tell when it ends, so its memory must never be reused. keep_version:
 * only a copy out of it may be running (a pushout reads it, nothing writes it), so its
 * bytes stay its version, which a later flush may push home again; else its bytes are
 * unknown. */
void convoy__devmem_pin(convoy__devmem_t *dm, convoy__devcopy_t *copy, int keep_version);
/* Keep a buffer (a fresh buffer, or a copy's replaced memory) out of use until the
 * device closes: a transfer into or out of it may still be running. Its bytes stay in
 * use. */
void convoy__devmem_keep_buffer(convoy__devmem_t *dm, void *ptr, size_t bytes);
/* Free data's copy (no user, nothing in flight). */
void convoy__devmem_drop(convoy__devmem_t *dm, convoy_data_t *data);

#endif /* CONVOY_DEVMEM_H */

/*
 * The trace's internals, shared by src/trace.c (recording: per-thread buffers, interned
 * names, open and close) and src/trace_write.c (the Chrome trace-event JSON writer that
 * runs once, at close). Internal to the trace: nothing else includes it.
 */
#ifndef CONVOY_TRACE_IMPL_H
#define CONVOY_TRACE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "src/trace.h"

#define NKINDS (CONVOY__EV_PROGRESS + 1)
#define NAME_CACHE 16 /* per-buffer cache of interned names (a power of two) */
#define TRACE_CHUNK_MIN (16u << 10) /* bytes of a thread's first chunk; each next one doubles */
#define TRACE_CHUNK_MAX (1u << 20)  /* ... up to this */
#define TRACE_FEED_CHUNKS 4         /* chunks of TRACE_CHUNK_MAX the feeder keeps ready (4 MiB) */

typedef struct chunk {
    _Atomic(struct chunk *) next;
    uint32_t cap;   /* events */
    uint32_t bytes; /* of the whole chunk */
    atomic_uint n;  /* events written; stored with release after each event */
    convoy__trace_event_t ev[];
} chunk_t;

/* A chunk of about bytes bytes, its pages untouched; NULL without memory. */
chunk_t *convoy__trace_chunk_new(size_t bytes);

/* The feeder (trace_feed.c): a thread that keeps TRACE_FEED_CHUNKS chunks of
 * TRACE_CHUNK_MAX bytes with their pages touched, so that the emitting threads do not
 * take the page faults of fresh memory. */
typedef struct trace_feed trace_feed_t;
/* Start one; NULL when it cannot (the trace then goes without). */
trace_feed_t *convoy__trace_feed_start(void);
/* A ready chunk (and a signal to make the next), or NULL when none is (or f is NULL). */
chunk_t *convoy__trace_feed_take(trace_feed_t *f);
/* Chunks taken so far, and in *ready (when not NULL) those ready now (tests). */
uint64_t convoy__trace_feed_fed(trace_feed_t *f, int *ready);
/* Stop the thread and free the chunks still ready. No thread may be taking. Accepts NULL. */
void convoy__trace_feed_stop(trace_feed_t *f);

/* One thread's events in one trace. Written by its owner only (lock-free). */
typedef struct tbuf {
    struct tbuf *next; /* trace->bufs, under trace->lock */
    uint64_t owner;    /* the owning thread's serial number */
    chunk_t *head, *tail;
    _Atomic uint64_t count[NKINDS]; /* per kind; owner stores, anyone loads (relaxed) */
    struct {
        const char *key; /* the pointer given at emit */
        const char *val; /* its interned copy */
    } cache[NAME_CACHE];
} tbuf_t;

typedef struct name_rec {
    int pid, tid; /* tid -1: the process */
    char *name;
} name_rec_t;

struct convoy__trace {
    uint64_t gen;         /* unique in the process; tags thread-local buffer pointers */
    pthread_mutex_t lock; /* bufs, names, the intern table */
    tbuf_t *bufs;
    name_rec_t *names;
    int nnames, names_cap;
    const char **ikeys; /* intern table: open addressing on the pointer */
    char **ivals;
    size_t icap, icount;
    char *path, *tmp_path;           /* path: expanded (%p, %h, %r) */
    char *key;                       /* the path made absolute, for the table of open traces */
    struct convoy__trace *next_open; /* the table of traces open in this process */
    int fd;                          /* the temporary file, open since trace_open */
    int flows;
    uint64_t t0_ns;
    trace_feed_t *feed;       /* NULL: none (it could not start, or was stopped) */
    _Atomic uint64_t dropped; /* events lost to a failed allocation */
};

/* A hash of a pointer (or of a task id), for open addressing. */
static inline size_t convoy__trace_ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(x ^ (x >> 32));
}

/* Write every event of t as JSON to the temporary file t->fd, flushed but not closed
 * (src/trace_write.c). Called under t->lock, once every thread is done emitting.
 * Returns 0 on success, -1 without memory, else the errno of the first failed write. */
int convoy__trace_write(convoy__trace_t *t);

#endif /* CONVOY_TRACE_IMPL_H */

/*
 * The distributed mode (doc/dist.md), layered above the core: owner computes over MPI.
 * Internal to convoy.
 *
 * Every rank sees the whole task stream (convoy_task_insert in the same order). For each
 * datum every rank keeps the same bookkeeping: its owner, the rank holding its newest
 * version and the ranks holding a copy of it. A task runs on one rank; for each datum it
 * reads that its rank does not hold, the holder inserts a send task and the runner a
 * receive task, both internal tasks of the core, so that the core's dependency tracking
 * orders them with the local tasks:
 *   - send: a reader of the datum after its last local writer; its chore copies the host
 *     bytes into an outgoing message (dist_comm.c), so a later local writer never waits
 *     for the network; cancelled (its writer failed), it sends a failure marker instead;
 *   - receive: a writer of the datum, held back by one extra `pending` count until the
 *     message has landed (the communication thread drops it), so no CPU worker ever
 *     waits for the network; its chore copies the landed bytes into host memory; a
 *     failure marker cancels it, and through it the readers.
 * Each (datum, version, destination) is sent once: a transfer is numbered by its place
 * in the stream (every rank counts every transfer), which names it in messages.
 *
 * Threads: the program's (one) inserting thread runs route() under dist->lock; CPU
 * workers run the send and receive chores; one communication thread makes every MPI call
 * between convoy_dist_start and the stop.
 */
#ifndef CONVOY_DIST_H
#define CONVOY_DIST_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "src/core.h"

/* A message being received or sent: payloads, then the entry table, then the footer. */
typedef struct convoy__dist_msg {
    atomic_int refs; /* the comm thread's, one per receive still to copy out of it */
    size_t size, cap;
    unsigned char *buf;
} convoy__dist_msg_t;

/* One entry of a message's table: a flow (or a failure marker) of one transfer. */
typedef struct convoy__dist_entry {
    uint64_t xfer;   /* the transfer's number in the stream */
    uint64_t offset; /* of its payload in the message */
    uint64_t bytes;  /* of its payload */
    uint32_t failed; /* 1: a failure marker, the payload is the message text */
    uint32_t pad;
} convoy__dist_entry_t;

/* The footer, the last bytes of every message. */
typedef struct convoy__dist_footer {
    uint32_t nflows;
    uint32_t magic; /* CONVOY__DIST_MAGIC */
} convoy__dist_footer_t;
#define CONVOY__DIST_MAGIC 0xc0c0d157u

/* One transfer as this rank sees it (a send or a receive), owned by the dist layer until
 * the task's done callback frees it. */
typedef struct convoy__dist_xfer {
    struct convoy__dist *dist;
    uint64_t xfer;
    int peer;             /* the destination (send) or the source (receive) */
    convoy__task_t *task; /* the receive task, referenced until it is matched */
    /* Set when the message landed (a receive): */
    convoy__dist_msg_t *msg;
    uint64_t offset, bytes;
    int failed;
    char *why;                      /* a receive's chore failed: why (malloc'd) */
    struct convoy__dist_xfer *next; /* in a hash bucket */
} convoy__dist_xfer_t;

/* What every rank knows of one datum (the same on every rank), under dist->lock. */
typedef struct convoy__dist_datum {
    int owner;
    int holder;     /* the rank holding the newest version */
    int used;       /* a task used it: the owner is fixed */
    uint8_t *valid; /* size bytes: 1 where a rank holds the newest version */
} convoy__dist_datum_t;

/* Outgoing: the message being filled for one peer. */
typedef struct convoy__dist_out {
    convoy__dist_msg_t *open;   /* NULL: none */
    convoy__dist_entry_t *ents; /* its entries, fuse_max_flows of room */
    int nents;
    uint64_t opened_ns;
} convoy__dist_out_t;

/* A message closed and waiting for the comm thread, or in flight. */
typedef struct convoy__dist_send {
    convoy__dist_msg_t *msg;
    int peer;
    MPI_Request req;
    struct convoy__dist_send *next;
} convoy__dist_send_t;

#define CONVOY__DIST_BUCKETS 4096

typedef struct convoy__dist {
    convoy_context_t *ctx;
    MPI_Comm comm;
    int rank, size;
    int we_initialised; /* convoy called MPI_Init_thread: it finalises */
    /* Parameters, read once. */
    int fuse;
    int fuse_max_flows;
    uint64_t fuse_max_bytes, large_bytes, fuse_wait_ns;

    pthread_mutex_t lock;        /* the stream's bookkeeping (program thread) */
    convoy__dist_datum_t **data; /* by datum id */
    uint64_t ndata;
    uint64_t next_xfer;
    convoy_class_t *send_cls, *recv_cls;

    /* Transfers done or not: the collective wait waits for outstanding == 0. */
    pthread_mutex_t done_lock;
    pthread_cond_t done_cond;
    atomic_long sends_outstanding, recvs_outstanding;
    char recv_failure[1024]; /* the first failed receive since the last wait (done_lock) */

    /* Receives: by transfer number; a message may land before its receive is inserted. */
    pthread_mutex_t match_lock;
    convoy__dist_xfer_t *bucket[CONVOY__DIST_BUCKETS];

    /* Outgoing, under out_lock: per peer, and the closed messages for the comm thread. */
    pthread_mutex_t out_lock;
    convoy__dist_out_t *out;
    convoy__dist_send_t *closed, **closed_tail;
    atomic_int waiting; /* a collective wait runs: partial messages leave once packed */

    /* The collective part of the wait, run by the comm thread. */
    pthread_mutex_t coll_lock;
    pthread_cond_t coll_cond;
    int coll_state;       /* 0 idle, 1 asked, 2 running, 3 done */
    int coll_failed_rank; /* in: this rank's key (dist.c); out: the lowest key, whose
                             rank's message coll_msg then holds */
    uint64_t failed_seen; /* ctx's tasks_failed at the last collective wait */
    char coll_msg[1024];  /* in: this rank's failure; out: the lowest failing rank's */

    /* A failure (of MPI, or a message that is not convoy's): no more flows, every later
     * insertion fails with it; mpi_failed: MPI itself, so not even the wait can meet. */
    atomic_int broken, mpi_failed;
    char broken_msg[512];

    pthread_t thread;
    atomic_int stop;
    int thread_started;

    struct {
        _Atomic uint64_t msgs_sent, msgs_recv, flows_sent, flows_recv, bytes_sent, bytes_recv,
            large_sent;
    } stats;
} convoy__dist_t;

/* dist_comm.c */
void convoy__dist_msg_unref(convoy__dist_msg_t *m); /* accepts NULL */
convoy_status_t convoy__dist_comm_start(convoy__dist_t *dist);
void convoy__dist_comm_stop(convoy__dist_t *dist);
/* From a send chore (a CPU worker): queue bytes (a flow) or a failure text (failed 1) of
 * transfer xfer for peer. Returns 0, or -1 out of memory. */
int convoy__dist_post(convoy__dist_t *dist, int peer, uint64_t xfer, const void *bytes, size_t len,
                      int failed);
/* Draw a message in the trace (when on): recv 0 sent, 1 received; counted with the
 * messages of convoy_get_stats, so the trace holds as many as the stats say. */
void convoy__dist_trace_msg(convoy__dist_t *dist, int recv, int peer, uint32_t nflows,
                            size_t bytes);
/* dist_match.c */
/* A whole message landed from peer: check its table, hand each flow to its receive. */
void convoy__dist_unpack(convoy__dist_t *dist, convoy__dist_msg_t *m, int peer);
/* A receive task was inserted: match it with a landed message or wait for one. */
void convoy__dist_expect(convoy__dist_t *dist, convoy__dist_xfer_t *x);
/* Run the collective part of the wait on the comm thread; blocks the caller. */
convoy_status_t convoy__dist_collective(convoy__dist_t *dist);
/* Record a failure of MPI (the first one wins) and cancel what waits for a message. */
void convoy__dist_break(convoy__dist_t *dist, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A transfer task is done: wake the collective wait when none is left. */
void convoy__dist_xfer_done(convoy__dist_t *dist, int recv);

#endif /* CONVOY_DIST_H */

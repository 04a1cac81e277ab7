/*
 * The communication thread of the distributed mode: message fusion, non-blocking sends
 * and receives, matching landed flows with receive tasks, and the collective part of the
 * wait. It makes every MPI call of convoy between start and stop, so any thread level
 * from MPI_THREAD_SERIALIZED up works.
 *
 * Fusion, the copy plan's idea on the network: flows for one peer join an open message
 * until it holds dist_fuse_max_flows flows or dist_fuse_max_bytes bytes, or it has waited
 * dist_fuse_wait_us, or a collective wait runs and this rank has nothing left to pack. A
 * flow over dist_large_bytes travels alone, so small flows never queue behind it.
 * Messages go with tag CONVOY__DIST_TAG on convoy's own communicator. What a landed
 * message does (matching its flows with receive tasks) is dist_match.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/dist.h"

#define CONVOY__DIST_TAG 7

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static convoy__dist_msg_t *msg_new(size_t cap)
{
    convoy__dist_msg_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->buf = malloc(cap > 0 ? cap : 1);
    if (m->buf == NULL) {
        free(m);
        return NULL;
    }
    m->cap = cap;
    atomic_init(&m->refs, 1);
    return m;
}

void convoy__dist_msg_unref(convoy__dist_msg_t *m)
{
    if (m != NULL && atomic_fetch_sub(&m->refs, 1) == 1) {
        free(m->buf);
        free(m);
    }
}

static int msg_reserve(convoy__dist_msg_t *m, size_t more)
{
    if (m->size + more <= m->cap)
        return 0;
    size_t cap = m->cap * 2 > m->size + more ? m->cap * 2 : m->size + more;
    unsigned char *b = realloc(m->buf, cap);
    if (b == NULL)
        return -1;
    m->buf = b;
    m->cap = cap;
    return 0;
}

/* Under out_lock: finish o's open message for peer (table and footer) and queue it. */
static int close_open(convoy__dist_t *dist, convoy__dist_out_t *o, int peer)
{
    convoy__dist_msg_t *m = o->open;
    size_t table = (size_t)o->nents * sizeof(convoy__dist_entry_t);
    convoy__dist_send_t *s = malloc(sizeof(*s));
    if (s == NULL || msg_reserve(m, table + sizeof(convoy__dist_footer_t)) != 0) {
        free(s);
        return -1;
    }
    memcpy(m->buf + m->size, o->ents, table);
    m->size += table;
    convoy__dist_footer_t f = {.nflows = (uint32_t)o->nents, .magic = CONVOY__DIST_MAGIC};
    memcpy(m->buf + m->size, &f, sizeof(f));
    m->size += sizeof(f);
    *s = (convoy__dist_send_t){.msg = m, .peer = peer};
    *dist->closed_tail = s;
    dist->closed_tail = &s->next;
    o->open = NULL;
    o->nents = 0;
    return 0;
}

int convoy__dist_post(convoy__dist_t *dist, int peer, uint64_t xfer, const void *bytes, size_t len,
                      int failed)
{
    int alone = !failed && len > dist->large_bytes;
    pthread_mutex_lock(&dist->out_lock);
    /* A large flow is a message of its own beside the open one, which goes on filling. */
    convoy__dist_out_t lone = {.ents = (convoy__dist_entry_t[1]){{0}}};
    convoy__dist_out_t *o = alone ? &lone : &dist->out[peer];
    int rc = 0;
    if (o->open != NULL &&
        (o->nents == dist->fuse_max_flows || o->open->size + len > dist->fuse_max_bytes))
        rc = close_open(dist, o, peer);
    if (rc == 0 && o->open == NULL) {
        size_t cap = align8(len) + (size_t)dist->fuse_max_flows * sizeof(convoy__dist_entry_t) +
                     sizeof(convoy__dist_footer_t);
        if (!alone && cap < dist->fuse_max_bytes)
            cap = dist->fuse_max_bytes;
        o->open = msg_new(cap);
        o->opened_ns = convoy__now_ns();
        rc = o->open != NULL ? 0 : -1;
    }
    if (rc == 0 && msg_reserve(o->open, align8(len)) == 0) {
        convoy__dist_msg_t *m = o->open;
        memcpy(m->buf + m->size, bytes, len);
        o->ents[o->nents++] = (convoy__dist_entry_t){
            .xfer = xfer, .offset = m->size, .bytes = len, .failed = (uint32_t)failed};
        m->size += align8(len);
        atomic_fetch_add_explicit(&dist->stats.flows_sent, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&dist->stats.bytes_sent, len, memory_order_relaxed);
        if (alone)
            atomic_fetch_add_explicit(&dist->stats.large_sent, 1, memory_order_relaxed);
        if (alone || o->nents == dist->fuse_max_flows)
            rc = close_open(dist, o, peer);
    } else {
        rc = -1;
    }
    pthread_mutex_unlock(&dist->out_lock);
    return rc;
}

void convoy__dist_trace_msg(convoy__dist_t *dist, int recv, int peer, uint32_t nflows, size_t bytes)
{
    convoy__trace_t *tr = dist->ctx->trace;
    if (tr != NULL)
        convoy__trace_emit(tr, &(convoy__trace_event_t){.kind = CONVOY__EV_MESSAGE,
                                                        .stage = (uint8_t)recv,
                                                        .count = (int32_t)nflows,
                                                        .ts_ns = convoy__now_ns(),
                                                        .bytes = bytes,
                                                        .other_id = (uint64_t)peer,
                                                        .ring_id = -1});
}

/* MPI's text for an error code. */
static const char *mpi_text(int rc, char *buf)
{
    int len = 0;
    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS)
        snprintf(buf, MPI_MAX_ERROR_STRING, "error %d", rc);
    return buf;
}

/* Requests in flight and what each is for: tested together with one MPI_Testsome, as
 * one MPI_Test each would run MPI's progress engine once per request. */
typedef struct pending {
    void **item;
    MPI_Request *req;
    int *idx;
    int n, cap;
} pending_t;

static int pend_add(pending_t *p, void *item, MPI_Request req)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        void **it = realloc(p->item, (size_t)cap * sizeof(*it));
        if (it != NULL)
            p->item = it;
        MPI_Request *rq = realloc(p->req, (size_t)cap * sizeof(*rq));
        if (rq != NULL)
            p->req = rq;
        int *ix = realloc(p->idx, (size_t)cap * sizeof(*ix));
        if (ix != NULL)
            p->idx = ix;
        if (it == NULL || rq == NULL || ix == NULL)
            return -1;
        p->cap = cap;
    }
    p->item[p->n] = item;
    p->req[p->n++] = req;
    return 0;
}

static void pend_free(pending_t *p)
{
    free(p->item);
    free(p->req);
    free(p->idx);
}

/* Test every request; fn(dist, item, ok) for each one done (all of them, ok 0, when MPI
 * failed). Returns how many were done. */
static int pend_test(convoy__dist_t *dist, pending_t *p, const char *what,
                     void (*fn)(convoy__dist_t *, void *, int))
{
    if (p->n == 0)
        return 0;
    int out = 0;
    char text[MPI_MAX_ERROR_STRING];
    int rc = MPI_Testsome(p->n, p->req, &out, p->idx, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        atomic_store(&dist->mpi_failed, 1);
        convoy__dist_break(dist, "%s: %s", what, mpi_text(rc, text));
        for (int i = 0; i < p->n; i++)
            fn(dist, p->item[i], 0);
        int n = p->n;
        p->n = 0;
        return n;
    }
    if (out == MPI_UNDEFINED || out == 0)
        return 0;
    for (int i = 0; i < out; i++) {
        fn(dist, p->item[p->idx[i]], 1);
        p->item[p->idx[i]] = NULL;
    }
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->item[i] != NULL) {
            p->item[k] = p->item[i];
            p->req[k++] = p->req[i];
        }
    }
    p->n = k;
    return out;
}

typedef struct comm_state {
    pending_t sending;   /* convoy__dist_send_t, Isend posted */
    pending_t receiving; /* convoy__dist_send_t (msg, peer), Imrecv posted */
    int coll_step;       /* 0 none, 1 reduce posted, 2 broadcast posted */
    MPI_Request coll_req;
    int coll_key, coll_min;
} comm_state_t;

static void sent(convoy__dist_t *dist, void *item, int ok)
{
    (void)dist;
    (void)ok;
    convoy__dist_send_t *s = item;
    convoy__dist_msg_unref(s->msg);
    free(s);
}

static void received(convoy__dist_t *dist, void *item, int ok)
{
    convoy__dist_send_t *r = item;
    if (ok)
        convoy__dist_unpack(dist, r->msg, r->peer);
    convoy__dist_msg_unref(r->msg);
    free(r);
}

/* Close what has waited long enough (or everything while a wait needs it), post the
 * closed messages. Returns how many it posted. */
static int post_sends(convoy__dist_t *dist, comm_state_t *cs)
{
    int flush = atomic_load(&dist->waiting) > 0 && atomic_load(&dist->sends_outstanding) == 0;
    pthread_mutex_lock(&dist->out_lock);
    /* Read under the lock: a message opened since would look older than time itself. */
    uint64_t now = convoy__now_ns();
    for (int p = 0; p < dist->size; p++) {
        convoy__dist_out_t *o = &dist->out[p];
        if (o->open != NULL && (flush || now - o->opened_ns >= dist->fuse_wait_ns) &&
            close_open(dist, o, p) != 0) {
            pthread_mutex_unlock(&dist->out_lock);
            convoy__dist_break(dist, "out of memory to close a message to rank %d", p);
            return 0;
        }
    }
    convoy__dist_send_t *list = dist->closed;
    dist->closed = NULL;
    dist->closed_tail = &dist->closed;
    pthread_mutex_unlock(&dist->out_lock);
    int n = 0;
    char text[MPI_MAX_ERROR_STRING];
    for (convoy__dist_send_t *s = list, *next; s != NULL; s = next) {
        next = s->next;
        int rc = atomic_load(&dist->broken)
                     ? MPI_ERR_OTHER
                     : MPI_Isend(s->msg->buf, (int)s->msg->size, MPI_BYTE, s->peer,
                                 CONVOY__DIST_TAG, dist->comm, &s->req);
        if (rc != MPI_SUCCESS || pend_add(&cs->sending, s, s->req) != 0) {
            if (rc == MPI_SUCCESS)
                convoy__dist_break(dist, "out of memory for the sends in flight");
            else if (!atomic_load(&dist->broken) && (atomic_store(&dist->mpi_failed, 1), 1))
                convoy__dist_break(dist, "MPI_Isend of %zu bytes to rank %d: %s", s->msg->size,
                                   s->peer, mpi_text(rc, text));
            sent(dist, s, 0);
            continue;
        }
        atomic_fetch_add_explicit(&dist->stats.msgs_sent, 1, memory_order_relaxed);
        convoy__dist_footer_t f;
        memcpy(&f, s->msg->buf + s->msg->size - sizeof(f), sizeof(f));
        convoy__dist_trace_msg(dist, 0, s->peer, f.nflows, s->msg->size);
        n++;
    }
    return n;
}

static int poll_recvs(convoy__dist_t *dist, comm_state_t *cs)
{
    int n = 0;
    char text[MPI_MAX_ERROR_STRING];
    for (;;) {
        int found = 0, count = 0;
        MPI_Message mm;
        MPI_Status st;
        int rc = MPI_Improbe(MPI_ANY_SOURCE, CONVOY__DIST_TAG, dist->comm, &found, &mm, &st);
        if (rc != MPI_SUCCESS) {
            atomic_store(&dist->mpi_failed, 1);
            convoy__dist_break(dist, "MPI_Improbe: %s", mpi_text(rc, text));
            return n;
        }
        if (!found)
            break;
        MPI_Get_count(&st, MPI_BYTE, &count);
        convoy__dist_send_t *r = calloc(1, sizeof(*r));
        convoy__dist_msg_t *m = msg_new((size_t)count);
        if (r == NULL || m == NULL) {
            free(r);
            convoy__dist_msg_unref(m);
            convoy__dist_break(dist, "out of memory for a message of %d bytes from rank %d", count,
                               st.MPI_SOURCE);
            return n;
        }
        m->size = (size_t)count;
        r->msg = m;
        r->peer = st.MPI_SOURCE;
        rc = MPI_Imrecv(m->buf, count, MPI_BYTE, &mm, &r->req);
        if (rc != MPI_SUCCESS || pend_add(&cs->receiving, r, r->req) != 0) {
            received(dist, r, 0);
            if (rc != MPI_SUCCESS)
                atomic_store(&dist->mpi_failed, 1);
            convoy__dist_break(dist, "MPI_Imrecv from rank %d: %s", st.MPI_SOURCE,
                               rc != MPI_SUCCESS ? mpi_text(rc, text) : "out of memory");
            return n;
        }
        n++;
    }
    return n + pend_test(dist, &cs->receiving, "a receive failed", received);
}

/* The collective part of the wait: the lowest key (dist.c: broken, failed, cancelled,
 * none; then by rank), then the message of its rank to all. */
static int step_collective(convoy__dist_t *dist, comm_state_t *cs)
{
    char text[MPI_MAX_ERROR_STRING];
    pthread_mutex_lock(&dist->coll_lock);
    int state = dist->coll_state;
    pthread_mutex_unlock(&dist->coll_lock);
    if (state != 1)
        return 0;
    int rc = MPI_SUCCESS, done = 0;
    if (cs->coll_step == 0) {
        cs->coll_key = dist->coll_failed_rank;
        rc = MPI_Iallreduce(&cs->coll_key, &cs->coll_min, 1, MPI_INT, MPI_MIN, dist->comm,
                            &cs->coll_req);
        cs->coll_step = 1;
    } else if ((rc = MPI_Test(&cs->coll_req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && done) {
        if (cs->coll_step == 1 && cs->coll_min < 3 * dist->size) {
            int root = cs->coll_min % dist->size;
            rc = MPI_Ibcast(dist->coll_msg, (int)sizeof(dist->coll_msg), MPI_CHAR, root, dist->comm,
                            &cs->coll_req);
            dist->coll_failed_rank = cs->coll_min;
            cs->coll_step = 2;
        } else {
            if (cs->coll_step == 1)
                dist->coll_failed_rank = cs->coll_min;
            cs->coll_step = 0;
            pthread_mutex_lock(&dist->coll_lock);
            dist->coll_state = 3;
            pthread_cond_broadcast(&dist->coll_cond);
            pthread_mutex_unlock(&dist->coll_lock);
        }
    }
    if (rc != MPI_SUCCESS) {
        atomic_store(&dist->mpi_failed, 1);
        convoy__dist_break(dist, "the collective wait: %s", mpi_text(rc, text));
    }
    return 1;
}

convoy_status_t convoy__dist_collective(convoy__dist_t *dist)
{
    pthread_mutex_lock(&dist->coll_lock);
    dist->coll_state = 1;
    while (dist->coll_state != 3 && !atomic_load(&dist->mpi_failed))
        pthread_cond_wait(&dist->coll_cond, &dist->coll_lock);
    dist->coll_state = 0;
    pthread_mutex_unlock(&dist->coll_lock);
    if (atomic_load(&dist->mpi_failed))
        return convoy__error(dist->ctx, CONVOY_ERR_DEVICE, "convoy_dist_wait: %s",
                             dist->broken_msg);
    return CONVOY_SUCCESS;
}

static void *comm_main(void *p)
{
    convoy__dist_t *dist = p;
    convoy__thread_mark("convoy's communication thread");
    convoy__thread_name("comm");
    comm_state_t cs = {0};
    int idle = 0;
    while (!atomic_load(&dist->stop) || cs.sending.n > 0) {
        int n = 0;
        if (!atomic_load(&dist->broken)) {
            n += post_sends(dist, &cs);
            n += pend_test(dist, &cs.sending, "a send failed", sent);
            n += poll_recvs(dist, &cs);
            n += step_collective(dist, &cs);
        } else {
            /* Broken: no more flows; what was posted is abandoned with MPI. While MPI itself
             * works, the collective wait still runs, so every rank hears of the cause. */
            for (int i = 0; i < cs.sending.n; i++)
                sent(dist, cs.sending.item[i], 0);
            cs.sending.n = 0;
            n += post_sends(dist, &cs); /* frees what is queued */
            if (!atomic_load(&dist->mpi_failed))
                n += step_collective(dist, &cs);
        }
        if (n > 0) {
            idle = 0;
        } else if (++idle > 200) {
            /* Nothing moves: poll every 20 us rather than take a core from the workers. */
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < cs.receiving.n; i++) {
        MPI_Cancel(&cs.receiving.req[i]);
        MPI_Request_free(&cs.receiving.req[i]);
        received(dist, cs.receiving.item[i], 0);
    }
    pend_free(&cs.sending);
    pend_free(&cs.receiving);
    return NULL;
}

convoy_status_t convoy__dist_comm_start(convoy__dist_t *dist)
{
    dist->out = calloc((size_t)dist->size, sizeof(*dist->out));
    convoy__dist_entry_t *ents =
        calloc((size_t)dist->size * (size_t)dist->fuse_max_flows, sizeof(*ents));
    if (dist->out == NULL || ents == NULL) {
        free(ents);
        return convoy__error(dist->ctx, CONVOY_ERR_NOMEM,
                             "out of memory for the distributed mode's messages");
    }
    for (int p = 0; p < dist->size; p++)
        dist->out[p].ents = ents + (size_t)p * (size_t)dist->fuse_max_flows;
    int rc = pthread_create(&dist->thread, NULL, comm_main, dist);
    if (rc != 0) {
        free(ents);
        return convoy__error(dist->ctx, CONVOY_ERR_NOMEM,
                             "could not start the communication thread: %s", strerror(rc));
    }
    dist->thread_started = 1;
    return CONVOY_SUCCESS;
}

void convoy__dist_comm_stop(convoy__dist_t *dist)
{
    if (dist->thread_started) {
        atomic_store(&dist->stop, 1);
        pthread_join(dist->thread, NULL);
        dist->thread_started = 0;
    }
    pthread_mutex_lock(&dist->out_lock);
    for (int p = 0; dist->out != NULL && p < dist->size; p++)
        convoy__dist_msg_unref(dist->out[p].open);
    for (convoy__dist_send_t *s = dist->closed, *next; s != NULL; s = next) {
        next = s->next;
        convoy__dist_msg_unref(s->msg);
        free(s);
    }
    dist->closed = NULL;
    pthread_mutex_unlock(&dist->out_lock);
    if (dist->out != NULL)
        free(dist->out[0].ents);
    for (int b = 0; b < CONVOY__DIST_BUCKETS; b++) {
        for (convoy__dist_xfer_t *x = dist->bucket[b], *next; x != NULL; x = next) {
            next = x->next;
            if (x->task == NULL) { /* landed, never asked for */
                convoy__dist_msg_unref(x->msg);
                free(x);
            }
        }
        dist->bucket[b] = NULL;
    }
}

/*
 * The distributed mode's matching: the flows of a landed message meet their receive
 * tasks (by transfer number, in either order: a message may land before its receive is
 * inserted), and a broken rank fails the receives still waiting.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"

/* Under match_lock: unlink and return the record of transfer xfer, or NULL. */
static convoy__dist_xfer_t *take(convoy__dist_t *dist, uint64_t xfer)
{
    convoy__dist_xfer_t **p = &dist->bucket[xfer % CONVOY__DIST_BUCKETS];
    for (; *p != NULL; p = &(*p)->next) {
        if ((*p)->xfer == xfer) {
            convoy__dist_xfer_t *x = *p;
            *p = x->next;
            x->next = NULL;
            return x;
        }
    }
    return NULL;
}

static void put(convoy__dist_t *dist, convoy__dist_xfer_t *x)
{
    convoy__dist_xfer_t **b = &dist->bucket[x->xfer % CONVOY__DIST_BUCKETS];
    x->next = *b;
    *b = x;
}

/* The receive x has its message (or a failure): let its task go. */
static void land(convoy__dist_t *dist, convoy__dist_xfer_t *x, const char *why)
{
    convoy__task_t *t = x->task;
    if (why != NULL || x->failed) {
        char text[1200];
        if (why != NULL)
            snprintf(text, sizeof(text), "%s", why);
        else
            snprintf(text, sizeof(text), "the task that wrote its datum failed on %.*s",
                     (int)(x->bytes > 1100 ? 1100 : x->bytes),
                     (const char *)x->msg->buf + x->offset);
        t->fetch_msg = strdup(text);
        atomic_store(&t->cancel, 1);
    }
    convoy__task_release(dist->ctx, t); /* the landing guard */
    convoy__task_unref(t);
}

void convoy__dist_expect(convoy__dist_t *dist, convoy__dist_xfer_t *x)
{
    pthread_mutex_lock(&dist->match_lock);
    convoy__dist_xfer_t *early = take(dist, x->xfer);
    if (early == NULL && !atomic_load(&dist->broken))
        put(dist, x);
    pthread_mutex_unlock(&dist->match_lock);
    if (early != NULL) {
        x->msg = early->msg;
        x->offset = early->offset;
        x->bytes = early->bytes;
        x->failed = early->failed;
        free(early);
        land(dist, x, NULL);
    } else if (atomic_load(&dist->broken)) {
        land(dist, x, dist->broken_msg);
    }
}

/* One flow of a landed message. */
static void deliver(convoy__dist_t *dist, convoy__dist_msg_t *m, const convoy__dist_entry_t *e,
                    int peer)
{
    atomic_fetch_add(&m->refs, 1);
    pthread_mutex_lock(&dist->match_lock);
    convoy__dist_xfer_t *x = take(dist, e->xfer);
    if (x == NULL) {
        /* Before its receive task was inserted: keep it for convoy__dist_expect. */
        x = calloc(1, sizeof(*x));
        if (x == NULL) {
            pthread_mutex_unlock(&dist->match_lock);
            convoy__dist_msg_unref(m);
            convoy__dist_break(dist, "out of memory for a flow from rank %d", peer);
            return;
        }
        *x = (convoy__dist_xfer_t){.dist = dist,
                                   .xfer = e->xfer,
                                   .peer = peer,
                                   .msg = m,
                                   .offset = e->offset,
                                   .bytes = e->bytes,
                                   .failed = (int)e->failed};
        put(dist, x);
        pthread_mutex_unlock(&dist->match_lock);
        return;
    }
    pthread_mutex_unlock(&dist->match_lock);
    x->msg = m;
    x->offset = e->offset;
    x->bytes = e->bytes;
    x->failed = (int)e->failed;
    land(dist, x, NULL);
}

/* A whole message landed from peer: check its table, deliver each flow. */
void convoy__dist_unpack(convoy__dist_t *dist, convoy__dist_msg_t *m, int peer)
{
    convoy__dist_footer_t f;
    if (m->size < sizeof(f)) {
        convoy__dist_break(dist, "a message of %zu bytes from rank %d is too short", m->size, peer);
        return;
    }
    memcpy(&f, m->buf + m->size - sizeof(f), sizeof(f));
    size_t table = (size_t)f.nflows * sizeof(convoy__dist_entry_t);
    if (f.magic != CONVOY__DIST_MAGIC || table > m->size - sizeof(f)) {
        convoy__dist_break(dist, "a message from rank %d is not convoy's (magic 0x%x, %u flows)",
                           peer, f.magic, f.nflows);
        return;
    }
    size_t base = m->size - sizeof(f) - table;
    atomic_fetch_add_explicit(&dist->stats.msgs_recv, 1, memory_order_relaxed);
    convoy__dist_trace_msg(dist, 1, peer, f.nflows, m->size);
    for (uint32_t i = 0; i < f.nflows; i++) {
        convoy__dist_entry_t e;
        memcpy(&e, m->buf + base + i * sizeof(e), sizeof(e));
        if (e.offset > base || e.bytes > base - e.offset) {
            convoy__dist_break(dist, "flow %u of a message from rank %d runs past its payload", i,
                               peer);
            return;
        }
        atomic_fetch_add_explicit(&dist->stats.flows_recv, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&dist->stats.bytes_recv, e.bytes, memory_order_relaxed);
        deliver(dist, m, &e, peer);
    }
}

void convoy__dist_break(convoy__dist_t *dist, const char *fmt, ...)
{
    pthread_mutex_lock(&dist->match_lock);
    int first = !atomic_load(&dist->broken);
    if (first) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(dist->broken_msg, sizeof(dist->broken_msg),
                         "distributed mode, rank %d: ", dist->rank);
        vsnprintf(dist->broken_msg + n, sizeof(dist->broken_msg) - (size_t)n, fmt, ap);
        va_end(ap);
        atomic_store(&dist->broken, 1);
    }
    /* Every receive still waiting would wait for ever: they fail, naming the cause. */
    convoy__dist_xfer_t *waiting = NULL;
    for (int b = 0; b < CONVOY__DIST_BUCKETS; b++) {
        convoy__dist_xfer_t *x = dist->bucket[b], *next;
        dist->bucket[b] = NULL;
        for (; x != NULL; x = next) {
            next = x->next;
            if (x->task != NULL) {
                x->next = waiting;
                waiting = x;
            } else {
                convoy__dist_msg_unref(x->msg);
                free(x);
            }
        }
    }
    pthread_mutex_unlock(&dist->match_lock);
    if (first)
        convoy__log_error("%s", dist->broken_msg);
    for (convoy__dist_xfer_t *x = waiting, *next; x != NULL; x = next) {
        next = x->next;
        land(dist, x, dist->broken_msg);
    }
    pthread_mutex_lock(&dist->done_lock);
    pthread_cond_broadcast(&dist->done_cond);
    pthread_mutex_unlock(&dist->done_lock);
    pthread_mutex_lock(&dist->coll_lock);
    pthread_cond_broadcast(&dist->coll_cond);
    pthread_mutex_unlock(&dist->coll_lock);
}

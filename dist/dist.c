/*
 * The distributed mode: the public calls, the stream's bookkeeping (which rank runs a
 * task, which transfers it needs) and the send and receive tasks (dist.h says how they
 * ride on the core).
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"

static convoy__dist_t *dist_of(const convoy_context_t *ctx)
{
    return ctx != NULL ? (convoy__dist_t *)ctx->dist : NULL;
}

int convoy_build_has_mpi(void)
{
    return 1;
}

int convoy_dist_rank(const convoy_context_t *ctx)
{
    convoy__dist_t *dist = dist_of(ctx);
    return dist != NULL ? dist->rank : 0;
}

int convoy_dist_size(const convoy_context_t *ctx)
{
    convoy__dist_t *dist = dist_of(ctx);
    return dist != NULL ? dist->size : 1;
}

/* Under dist->lock: the datum's bookkeeping, made on first use (owner 0); NULL when out
 * of memory. */
static convoy__dist_datum_t *datum(convoy__dist_t *dist, const convoy_data_t *d)
{
    if (d->id >= dist->ndata) {
        uint64_t n = dist->ndata ? dist->ndata : 64;
        while (n <= d->id)
            n *= 2;
        convoy__dist_datum_t **t = realloc(dist->data, n * sizeof(*t));
        if (t == NULL)
            return NULL;
        memset(t + dist->ndata, 0, (n - dist->ndata) * sizeof(*t));
        dist->data = t;
        dist->ndata = n;
    }
    convoy__dist_datum_t *dd = dist->data[d->id];
    if (dd == NULL) {
        dd = calloc(1, sizeof(*dd) + (size_t)dist->size);
        if (dd == NULL)
            return NULL;
        dd->valid = (uint8_t *)(dd + 1);
        dd->valid[0] = 1;
        dist->data[d->id] = dd;
    }
    return dd;
}

convoy_status_t convoy_data_set_owner(convoy_data_t *data, int rank)
{
    if (data == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_data_set_owner: data is NULL");
    convoy__dist_t *dist = dist_of(data->ctx);
    if (dist == NULL)
        return convoy__error(data->ctx, CONVOY_ERR_STATE,
                             "convoy_data_set_owner(datum %llu): the distributed mode is off "
                             "(convoy_dist_start first)",
                             (unsigned long long)data->id);
    if (rank < 0 || rank >= dist->size)
        return convoy__error(data->ctx, CONVOY_ERR_INVALID,
                             "convoy_data_set_owner(datum %llu): rank %d is out of range [0, %d)",
                             (unsigned long long)data->id, rank, dist->size);
    pthread_mutex_lock(&dist->lock);
    convoy__dist_datum_t *dd = datum(dist, data);
    convoy_status_t st = CONVOY_SUCCESS;
    if (dd == NULL) {
        st = convoy__error(data->ctx, CONVOY_ERR_NOMEM, "convoy_data_set_owner: out of memory");
    } else if (dd->used && dd->owner != rank) {
        st = convoy__error(data->ctx, CONVOY_ERR_INVALID,
                           "convoy_data_set_owner(datum %llu): rank %d, but tasks used it already "
                           "with owner %d; set owners before the first task",
                           (unsigned long long)data->id, rank, dd->owner);
    } else {
        memset(dd->valid, 0, (size_t)dist->size);
        dd->owner = dd->holder = rank;
        dd->valid[rank] = 1;
    }
    pthread_mutex_unlock(&dist->lock);
    return st;
}

int convoy_data_owner(const convoy_data_t *data)
{
    convoy__dist_t *dist = data != NULL ? dist_of(data->ctx) : NULL;
    if (dist == NULL)
        return 0;
    pthread_mutex_lock(&dist->lock);
    convoy__dist_datum_t *dd = datum(dist, data);
    int owner = dd != NULL ? dd->owner : 0;
    pthread_mutex_unlock(&dist->lock);
    return owner;
}

/* The chore of a send: the datum's host bytes into the message for the peer. */
static int send_chore(const convoy_task_view_t *task, void *stream)
{
    (void)stream;
    convoy__dist_xfer_t *x = *(convoy__dist_xfer_t *const *)task->args;
    return convoy__dist_post(x->dist, x->peer, x->xfer, task->flows[0], task->flow_bytes[0], 0);
}

/* A send is done: cancelled or failed, the peer gets a failure marker instead. */
static void send_done(void *arg, uint64_t id, convoy_status_t outcome, const char *msg)
{
    (void)id;
    convoy__dist_xfer_t *x = arg;
    convoy__dist_t *dist = x->dist;
    if (outcome != CONVOY_SUCCESS) {
        char text[1100];
        pthread_mutex_lock(&dist->ctx->error_lock);
        snprintf(text, sizeof(text), "rank %d: %s", dist->rank,
                 dist->ctx->first_failure[0] ? dist->ctx->first_failure
                                             : (msg ? msg : "a failure before it"));
        pthread_mutex_unlock(&dist->ctx->error_lock);
        if (convoy__dist_post(dist, x->peer, x->xfer, text, strlen(text) + 1, 1) != 0)
            convoy__dist_break(dist, "out of memory for a failure marker to rank %d", x->peer);
    }
    free(x);
    convoy__dist_xfer_done(dist, 0);
}

/* The chore of a receive: the landed bytes into host memory. */
static int recv_chore(const convoy_task_view_t *task, void *stream)
{
    (void)stream;
    convoy__dist_xfer_t *x = *(convoy__dist_xfer_t *const *)task->args;
    if (x->bytes != task->flow_bytes[0]) {
        char why[256];
        snprintf(why, sizeof(why),
                 "it carries %llu bytes, the datum has %zu here (did the ranks create their data "
                 "differently?)",
                 (unsigned long long)x->bytes, task->flow_bytes[0]);
        x->why = strdup(why);
        return -1;
    }
    memcpy(task->flows[0], x->msg->buf + x->offset, x->bytes);
    return 0;
}

static void recv_done(void *arg, uint64_t id, convoy_status_t outcome, const char *msg)
{
    (void)id;
    convoy__dist_xfer_t *x = arg;
    convoy__dist_t *dist = x->dist;
    /* A receive that failed (not one cancelled here): its cause for the wait's message. */
    if (outcome != CONVOY_SUCCESS && (x->why != NULL || (msg && strncmp(msg, "cancelled", 9)))) {
        pthread_mutex_lock(&dist->done_lock);
        if (dist->recv_failure[0] == '\0')
            snprintf(dist->recv_failure, sizeof(dist->recv_failure),
                     "the receive of a datum from rank %d failed: %s", x->peer,
                     x->why != NULL ? x->why : msg);
        pthread_mutex_unlock(&dist->done_lock);
    }
    convoy__dist_msg_unref(x->msg);
    free(x->why);
    free(x);
    convoy__dist_xfer_done(dist, 1);
}

/* An internal task of the core (kind's queue and accounting) running class cls: both
 * classes have one flow, so the task's layout is the kind's. */
static convoy__task_t *xfer_task(convoy__dist_t *dist, int kind, convoy_class_t *cls,
                                 convoy_data_t *d, convoy__dist_xfer_t *x)
{
    convoy__task_t *t = convoy__task_new_internal(dist->ctx, kind, 0, &d, &x, sizeof(x));
    if (t == NULL)
        return NULL;
    t->cls = cls;
    return t;
}

static convoy_status_t add_send(convoy__dist_t *dist, convoy_data_t *d, uint64_t xfer, int peer)
{
    convoy__dist_xfer_t *x = calloc(1, sizeof(*x));
    convoy__task_t *t = x != NULL ? xfer_task(dist, CONVOY__CLS_HOST, dist->send_cls, d, x) : NULL;
    if (t == NULL) {
        free(x);
        return convoy__error(dist->ctx, CONVOY_ERR_NOMEM, "out of memory for a send of datum %llu",
                             (unsigned long long)d->id);
    }
    *x = (convoy__dist_xfer_t){.dist = dist, .xfer = xfer, .peer = peer};
    t->done = send_done;
    t->done_arg = x;
    atomic_fetch_add(&dist->sends_outstanding, 1);
    convoy__task_track(dist->ctx, t); /* untracked (no memory) it is cancelled: a marker */
    convoy__task_release(dist->ctx, t);
    return CONVOY_SUCCESS;
}

static convoy_status_t add_recv(convoy__dist_t *dist, convoy_data_t *d, uint64_t xfer, int peer)
{
    convoy__dist_xfer_t *x = calloc(1, sizeof(*x));
    convoy__task_t *t =
        x != NULL ? xfer_task(dist, CONVOY__CLS_HOST_RW, dist->recv_cls, d, x) : NULL;
    if (t == NULL) {
        free(x);
        return convoy__error(dist->ctx, CONVOY_ERR_NOMEM,
                             "out of memory for a receive of datum %llu",
                             (unsigned long long)d->id);
    }
    *x = (convoy__dist_xfer_t){.dist = dist, .xfer = xfer, .peer = peer, .task = t};
    t->done = recv_done;
    t->done_arg = x;
    atomic_fetch_add(&dist->recvs_outstanding, 1);
    atomic_fetch_add(&t->pending, 1); /* the landing guard, dropped by the comm thread */
    atomic_fetch_add(&t->refs, 1);    /* the match table's */
    convoy__task_track(dist->ctx, t);
    convoy__dist_expect(dist, x);
    convoy__task_release(dist->ctx, t);
    return CONVOY_SUCCESS;
}

/* The rank that runs a task: named, else the owner of its first written flow's datum. */
static convoy_status_t runner(convoy__dist_t *dist, convoy_class_t *cls,
                              convoy_data_t *const *flows, const convoy_task_opts_t *opts,
                              int *rank_p)
{
    if (opts != NULL && opts->rank != 0) {
        if (opts->rank < 0 || opts->rank > dist->size)
            return convoy__error(dist->ctx, CONVOY_ERR_INVALID,
                                 "convoy_task_insert_ex(%s): rank option %d names rank %d, out of "
                                 "range [0, %d) (use CONVOY_RANK(r); 0 means the owner rule)",
                                 cls->name, opts->rank, opts->rank - 1, dist->size);
        *rank_p = opts->rank - 1;
        return CONVOY_SUCCESS;
    }
    int first = 0;
    for (int i = cls->nflows - 1; i >= 0; i--)
        if (cls->modes[i] & CONVOY_WRITE)
            first = i;
    if (!(cls->modes[first] & CONVOY_WRITE))
        first = 0;
    convoy__dist_datum_t *dd = datum(dist, flows[first]);
    if (dd == NULL)
        return convoy__error(dist->ctx, CONVOY_ERR_NOMEM, "out of memory for the distributed mode");
    *rank_p = dd->owner;
    return CONVOY_SUCCESS;
}

/* The core's route hook: the transfers the task needs, and whether it runs here. */
static convoy_status_t route(convoy_context_t *ctx, convoy_class_t *cls,
                             convoy_data_t *const *flows, const convoy_task_opts_t *opts,
                             int *here_p)
{
    convoy__dist_t *dist = ctx->dist;
    if (convoy__thread_role() != NULL)
        return convoy__error(ctx, CONVOY_ERR_STATE,
                             "convoy_task_insert(%s) on %s in the distributed mode: a task "
                             "inserted by a chore would be in one rank's stream only; insert it "
                             "from the program on every rank (doc/dist.md)",
                             cls->name, convoy__thread_role());
    if (atomic_load(&dist->broken))
        return convoy__error(ctx, CONVOY_ERR_DEVICE, "convoy_task_insert(%s): %s", cls->name,
                             dist->broken_msg);
    pthread_mutex_lock(&dist->lock);
    int e = 0;
    convoy_status_t st = runner(dist, cls, flows, opts, &e);
    /* Every datum read (once per task) comes to e unless e holds its newest version. */
    for (int i = 0; i < cls->nflows && st == CONVOY_SUCCESS; i++) {
        convoy__dist_datum_t *dd = datum(dist, flows[i]);
        if (dd == NULL) {
            st = convoy__error(ctx, CONVOY_ERR_NOMEM, "out of memory for the distributed mode");
            break;
        }
        dd->used = 1;
        int reads = 0;
        for (int j = 0; j < cls->nflows; j++)
            reads |= flows[j] == flows[i] && (cls->modes[j] & CONVOY_READ);
        if (!reads || dd->valid[e])
            continue;
        uint64_t x = dist->next_xfer++;
        if (dist->rank == dd->holder)
            st = add_send(dist, flows[i], x, e);
        else if (dist->rank == e)
            st = add_recv(dist, flows[i], x, dd->holder);
        dd->valid[e] = 1;
    }
    /* A write makes e the only holder of the newest version. */
    for (int i = 0; i < cls->nflows && st == CONVOY_SUCCESS; i++) {
        if (!(cls->modes[i] & CONVOY_WRITE))
            continue;
        convoy__dist_datum_t *dd = datum(dist, flows[i]);
        memset(dd->valid, 0, (size_t)dist->size);
        dd->valid[e] = 1;
        dd->holder = e;
    }
    pthread_mutex_unlock(&dist->lock);
    *here_p = e == dist->rank;
    return st;
}

void convoy__dist_xfer_done(convoy__dist_t *dist, int recv)
{
    atomic_long *n = recv ? &dist->recvs_outstanding : &dist->sends_outstanding;
    if (atomic_fetch_sub(n, 1) == 1) {
        pthread_mutex_lock(&dist->done_lock);
        pthread_cond_broadcast(&dist->done_cond);
        pthread_mutex_unlock(&dist->done_lock);
    }
}

/* Wait for the local tasks, then for every transfer of this rank, then meet the others. */
static convoy_status_t dist_wait(convoy__dist_t *dist)
{
    convoy_context_t *ctx = dist->ctx;
    /* From now on partial messages leave as soon as this rank has nothing left to pack. */
    atomic_fetch_add(&dist->waiting, 1);
    convoy_status_t local = convoy_wait(ctx);
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", local != CONVOY_SUCCESS ? convoy_last_error(ctx) : "");
    char recv_failure[1024];
    pthread_mutex_lock(&dist->done_lock);
    while (
        (atomic_load(&dist->sends_outstanding) > 0 || atomic_load(&dist->recvs_outstanding) > 0) &&
        !atomic_load(&dist->broken))
        pthread_cond_wait(&dist->done_cond, &dist->done_lock);
    snprintf(recv_failure, sizeof(recv_failure), "%s", dist->recv_failure);
    dist->recv_failure[0] = '\0';
    pthread_mutex_unlock(&dist->done_lock);
    /* What the receives cancelled after the wait above counted them: a second local
     * wait collects it (cheap: nothing runs). */
    if (convoy_wait(ctx) != CONVOY_SUCCESS && local == CONVOY_SUCCESS) {
        local = CONVOY_ERR_TASK_FAILED;
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(ctx));
    }
    if (local != CONVOY_SUCCESS && recv_failure[0] != '\0') {
        char both[sizeof(msg)];
        snprintf(both, sizeof(both), "%.500s; %.500s", msg, recv_failure);
        memcpy(msg, both, sizeof(msg));
    }
    /* The key of the collective, lowest first: a broken rank, a rank whose tasks failed,
     * one where tasks were only cancelled (by a failure elsewhere), then by rank. */
    uint64_t failed = atomic_load(&ctx->stats.tasks_failed);
    int kind = atomic_load(&dist->broken)   ? 0
               : local == CONVOY_SUCCESS    ? 3
               : failed > dist->failed_seen ? 1
                                            : 2;
    dist->failed_seen = failed;
    if (kind == 0)
        snprintf(msg, sizeof(msg), "%s", dist->broken_msg);
    pthread_mutex_lock(&dist->coll_lock);
    dist->coll_failed_rank = kind * dist->size + (kind < 3 ? dist->rank : 0);
    snprintf(dist->coll_msg, sizeof(dist->coll_msg), "%s", msg);
    pthread_mutex_unlock(&dist->coll_lock);
    convoy_status_t st = convoy__dist_collective(dist);
    atomic_fetch_sub(&dist->waiting, 1);
    if (st != CONVOY_SUCCESS)
        return st;
    int key = dist->coll_failed_rank;
    if (key >= 3 * dist->size)
        return CONVOY_SUCCESS;
    return convoy__error(ctx, key < dist->size ? CONVOY_ERR_DEVICE : CONVOY_ERR_TASK_FAILED,
                         "convoy_dist_wait: on rank %d of %d: %s", key % dist->size, dist->size,
                         dist->coll_msg);
}

convoy_status_t convoy_dist_wait(convoy_context_t *ctx)
{
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_dist_wait: ctx is NULL");
    convoy_status_t refused = convoy__refuse_in_chore(ctx, "convoy_dist_wait");
    if (refused != CONVOY_SUCCESS)
        return refused;
    convoy__dist_t *dist = dist_of(ctx);
    return dist != NULL ? dist_wait(dist) : convoy_wait(ctx);
}

static void dist_stats(const convoy_context_t *ctx, convoy_stats_t *s)
{
    convoy__dist_t *dist = ctx->dist;
    s->dist_messages_sent = dist->stats.msgs_sent;
    s->dist_messages_received = dist->stats.msgs_recv;
    s->dist_flows_sent = dist->stats.flows_sent;
    s->dist_flows_received = dist->stats.flows_recv;
    s->dist_bytes_sent = dist->stats.bytes_sent;
    s->dist_bytes_received = dist->stats.bytes_recv;
    s->dist_large_sent = dist->stats.large_sent;
}

static void dist_free(convoy__dist_t *dist)
{
    for (uint64_t i = 0; i < dist->ndata; i++)
        free(dist->data[i]);
    free(dist->data);
    free(dist->out);
    pthread_mutex_destroy(&dist->lock);
    pthread_mutex_destroy(&dist->done_lock);
    pthread_cond_destroy(&dist->done_cond);
    pthread_mutex_destroy(&dist->match_lock);
    pthread_mutex_destroy(&dist->out_lock);
    pthread_mutex_destroy(&dist->coll_lock);
    pthread_cond_destroy(&dist->coll_cond);
    free(dist);
}

/* convoy_fini's hook: every rank waits for every rank, then MPI is let go. */
static void dist_fini(convoy_context_t *ctx)
{
    convoy__dist_t *dist = ctx->dist;
    if (dist_wait(dist) != CONVOY_SUCCESS)
        convoy__log_ctx(ctx, CONVOY__LOG_WARN, "convoy_fini: %s", ctx->error);
    convoy__dist_comm_stop(dist);
    ctx->dist_hooks = NULL;
    ctx->dist = NULL;
    MPI_Comm_free(&dist->comm);
    if (dist->we_initialised) {
        int done = 0;
        MPI_Finalized(&done);
        if (!done)
            MPI_Finalize();
    }
    dist_free(dist);
}

static const convoy__dist_hooks_t dist_hooks = {
    .route = route,
    .stats = dist_stats,
    .fini = dist_fini,
};

/* MPI itself: initialised here unless the program did, at a thread level convoy can use
 * (every call from the comm thread needs at least MPI_THREAD_SERIALIZED). */
static convoy_status_t start_mpi(convoy_context_t *ctx, convoy__dist_t *dist, const void *comm)
{
    int inited = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return convoy__error(ctx, CONVOY_ERR_UNAVAILABLE,
                                 "convoy_dist_start: MPI_Init_thread failed");
        dist->we_initialised = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_SERIALIZED)
        return convoy__error(ctx, CONVOY_ERR_UNAVAILABLE,
                             "convoy_dist_start: MPI gives thread level %d; convoy's "
                             "communication thread needs MPI_THREAD_SERIALIZED (%d) or "
                             "MPI_THREAD_MULTIPLE (%d): initialise MPI with MPI_Init_thread",
                             provided, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE);
    MPI_Comm base = comm != NULL ? *(const MPI_Comm *)comm : MPI_COMM_WORLD;
    if (MPI_Comm_dup(base, &dist->comm) != MPI_SUCCESS)
        return convoy__error(ctx, CONVOY_ERR_UNAVAILABLE, "convoy_dist_start: MPI_Comm_dup failed");
    /* Errors come back as codes (a peer that died among them), never abort here. */
    MPI_Comm_set_errhandler(dist->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(dist->comm, &dist->rank);
    MPI_Comm_size(dist->comm, &dist->size);
    return CONVOY_SUCCESS;
}

static convoy_status_t make_classes(convoy_context_t *ctx, convoy__dist_t *dist)
{
    convoy_access_t r = CONVOY_READ, w = CONVOY_WRITE;
    convoy_status_t st = convoy_class_new(ctx, "convoy:dist-send", 1, &r, 0, &dist->send_cls);
    if (st == CONVOY_SUCCESS)
        st = convoy_class_new(ctx, "convoy:dist-recv", 1, &w, 0, &dist->recv_cls);
    if (st != CONVOY_SUCCESS)
        return st;
    /* Internal tasks: the core's accounting of the host side (fetch home first). */
    dist->send_cls->internal = CONVOY__CLS_HOST;
    dist->recv_cls->internal = CONVOY__CLS_HOST_RW;
    dist->send_cls->chore[CONVOY_DEVICE_CPU] = send_chore;
    dist->recv_cls->chore[CONVOY_DEVICE_CPU] = recv_chore;
    return CONVOY_SUCCESS;
}

convoy_status_t convoy_dist_start(convoy_context_t *ctx, const void *comm)
{
    if (ctx == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_dist_start: ctx is NULL");
    convoy_status_t st = convoy__refuse_in_chore(ctx, "convoy_dist_start");
    if (st != CONVOY_SUCCESS)
        return st;
    uint64_t inserted = atomic_load(&ctx->next_task_id);
    if (ctx->dist != NULL || inserted > 0)
        return convoy__error(ctx, CONVOY_ERR_STATE, "convoy_dist_start: %s",
                             ctx->dist != NULL ? "the distributed mode is on already"
                                               : "tasks were inserted already; start "
                                                 "the mode before the first task");
    convoy__dist_t *dist = convoy__calloc(ctx, 1, sizeof(*dist), "the distributed mode");
    if (dist == NULL)
        return CONVOY_ERR_NOMEM;
    dist->ctx = ctx;
    dist->comm = MPI_COMM_NULL;
    pthread_mutex_init(&dist->lock, NULL);
    pthread_mutex_init(&dist->done_lock, NULL);
    pthread_cond_init(&dist->done_cond, NULL);
    pthread_mutex_init(&dist->match_lock, NULL);
    pthread_mutex_init(&dist->out_lock, NULL);
    pthread_mutex_init(&dist->coll_lock, NULL);
    pthread_cond_init(&dist->coll_cond, NULL);
    dist->closed_tail = &dist->closed;
    dist->fuse = (int)convoy__param_int(&ctx->params, "dist_fuse");
    dist->fuse_max_flows = (int)convoy__param_int(&ctx->params, "dist_fuse_max_flows");
    dist->fuse_max_bytes = (uint64_t)convoy__param_int(&ctx->params, "dist_fuse_max_bytes");
    dist->large_bytes = (uint64_t)convoy__param_int(&ctx->params, "dist_large_bytes");
    dist->fuse_wait_ns =
        (uint64_t)(convoy__param_double(&ctx->params, "dist_fuse_wait_us") * 1000.0);
    if (!dist->fuse)
        dist->fuse_max_flows = 1;
    if ((st = start_mpi(ctx, dist, comm)) != CONVOY_SUCCESS)
        goto err;
    if ((st = make_classes(ctx, dist)) != CONVOY_SUCCESS)
        goto err;
    if ((st = convoy__dist_comm_start(dist)) != CONVOY_SUCCESS)
        goto err;
    ctx->dist = dist;
    ctx->dist_hooks = &dist_hooks;
    convoy__log_info("distributed mode: rank %d of %d, fusion %s (%d flows, %llu bytes)",
                     dist->rank, dist->size, dist->fuse ? "on" : "off", dist->fuse_max_flows,
                     (unsigned long long)dist->fuse_max_bytes);
    return CONVOY_SUCCESS;
err:
    if (dist->comm != MPI_COMM_NULL)
        MPI_Comm_free(&dist->comm);
    if (dist->we_initialised)
        MPI_Finalize();
    dist_free(dist);
    return st;
}

/*
 * The trace (see trace.h): per-thread event buffers, emit, naming, open and close. The
 * Chrome trace-event JSON writer that runs once, at close, is in trace_write.c; the
 * structures both share are in trace_impl.h.
 *
 * Recording. Each thread that emits gets its own buffer, a list of chunks of events,
 * registered in the trace under trace->lock the first time the thread emits into that
 * trace; after that an emit is a copy into the buffer's current chunk and no lock is
 * taken. The thread finds its buffer through a thread-local pointer tagged with the
 * trace's generation, a number unique in the process: a trace closed and a new one
 * opened (even at the same address) never match a stale pointer, so a later trace gets
 * a fresh buffer and the freed one is never touched.
 *
 * Names. Events carry class names as pointers, and convoy_fini frees classes before the
 * trace is written. So each name pointer is interned once, under the lock, into a table
 * of copies owned by the trace; a small per-buffer cache of recent pointers keeps the
 * common emit lock-free. This assumes an address is not reused for a different name
 * while the trace is open (class names live until fini).
 *
 * Writing. At close the events are written to the temporary file made at open (see
 * trace_write.c), which is then renamed over the path: a crash never leaves half a trace.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/proc.h"
#include "src/trace.h"
#include "src/trace_impl.h"
#include "src/util.h"

static _Atomic uint64_t next_gen = 1;
static _Atomic uint64_t next_serial = 1;

/* The calling thread's buffer in the trace of generation tls_gen. */
static _Thread_local uint64_t tls_gen;
static _Thread_local tbuf_t *tls_buf;
static _Thread_local uint64_t tls_serial; /* 0 until the thread first emits */

/* The traces open in this process, by key: a second context writing to the same file
 * would have its trace silently replaced by the first one's rename (or the reverse). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static convoy__trace_t *open_traces;

/* The path with its folder made absolute ("./a.json" and "a.json" are one file); the
 * path itself when the folder cannot be resolved (opening the file will then fail). */
static char *path_key(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash == NULL ? strdup(".") : strndup(path, (size_t)(slash - path) + 1);
    char *real = dir != NULL ? realpath(dir, NULL) : NULL;
    free(dir);
    if (real == NULL)
        return strdup(path);
    const char *base = slash == NULL ? path : slash + 1;
    size_t len = strlen(real) + strlen(base) + 2;
    char *key = malloc(len);
    if (key != NULL)
        snprintf(key, len, "%s/%s", real, base);
    free(real);
    return key;
}

/* 0 when t's key was free and t is now in the table. */
static int claim_path(convoy__trace_t *t)
{
    pthread_mutex_lock(&open_lock);
    convoy__trace_t *o = open_traces;
    while (o != NULL && strcmp(o->key, t->key) != 0)
        o = o->next_open;
    if (o == NULL) {
        t->next_open = open_traces;
        open_traces = t;
    }
    pthread_mutex_unlock(&open_lock);
    return o == NULL ? 0 : -1;
}

static void release_path(convoy__trace_t *t)
{
    pthread_mutex_lock(&open_lock);
    for (convoy__trace_t **p = &open_traces; *p != NULL; p = &(*p)->next_open)
        if (*p == t) {
            *p = t->next_open;
            break;
        }
    pthread_mutex_unlock(&open_lock);
}

/* CONVOY_ERR_IO when path exists and is not a regular file: the rename at close would
 * replace a symbolic link, a device (as root, /dev/null) or fail on a folder. */
static convoy_status_t check_target(convoy_context_t *ctx, const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return CONVOY_SUCCESS;
    const char *what = S_ISDIR(sb.st_mode)                          ? "a directory"
                       : S_ISLNK(sb.st_mode)                        ? "a symbolic link"
                       : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                                                                    : "not a regular file";
    return convoy__error(ctx, CONVOY_ERR_IO,
                         "cannot write the trace to %s: it exists and is %s (a trace replaces "
                         "only a regular file)",
                         path, what);
}

convoy_status_t convoy__trace_open(convoy_context_t *ctx, const char *pattern, int flows,
                                   convoy__trace_t **trace_p)
{
    if (pattern == NULL || pattern[0] == '\0')
        return convoy__error(ctx, CONVOY_ERR_INVALID, "trace: empty file name");
    convoy__trace_t *t = convoy__calloc(ctx, 1, sizeof(*t), "the trace");
    if (t == NULL)
        return CONVOY_ERR_NOMEM;
    t->fd = -1;
    convoy_status_t st = convoy__proc_expand_path(pattern, &t->path);
    if (st != CONVOY_SUCCESS) {
        char msg[512]; /* convoy__error writes over the message it would quote */
        snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
        convoy__error(ctx, st, "%s (parameter 'trace')", msg);
        goto err;
    }
    if ((st = check_target(ctx, t->path)) != CONVOY_SUCCESS)
        goto err;
    st = CONVOY_ERR_NOMEM;
    size_t len = strlen(t->path) + 64;
    if ((t->key = path_key(t->path)) == NULL || (t->tmp_path = malloc(len)) == NULL) {
        convoy__error(ctx, st, "out of host memory for the trace's path");
        goto err;
    }
    t->gen = atomic_fetch_add(&next_gen, 1);
    if (claim_path(t) != 0) {
        st = convoy__error(ctx, CONVOY_ERR_IO,
                           "cannot write the trace to %s: another context of this process is "
                           "writing its trace there (give each a path of its own)",
                           t->path);
        goto err;
    }
    /* Unique per open: two processes (or contexts) never share a temporary file. One
     * left by a process that died (a crash, a kill) under a pid now reused is skipped. */
    t->fd = -1;
    errno = EEXIST;
    for (uint64_t k = 0; k < 64 && t->fd < 0 && errno == EEXIST; k++) {
        snprintf(t->tmp_path, len, "%s.tmp.%ld.%" PRIu64 "%s%.0" PRIu64, t->path,
                 (long)getpid(), t->gen, k ? "." : "", k);
        t->fd = open(t->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    }
    if (t->fd < 0) {
        st = convoy__error(ctx, CONVOY_ERR_IO, "cannot write the trace to %s: %s", t->path,
                           strerror(errno));
        release_path(t);
        goto err;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->flows = flows != 0;
    if ((t->feed = convoy__trace_feed_start()) == NULL)
        convoy__log_debug("trace: no feeder thread; the emitting threads touch their chunks' "
                          "pages themselves");
    t->t0_ns = convoy__now_ns();
    *trace_p = t;
    return CONVOY_SUCCESS;
err:
    free(t->path);
    free(t->key);
    free(t->tmp_path);
    free(t);
    return st;
}

static void free_all(convoy__trace_t *t)
{
    convoy__trace_stop_feed(t);
    for (tbuf_t *b = t->bufs, *bn; b != NULL; b = bn) {
        bn = b->next;
        for (chunk_t *c = b->head, *cn; c != NULL; c = cn) {
            cn = atomic_load_explicit(&c->next, memory_order_acquire);
            free(c);
        }
        free(b);
    }
    for (int i = 0; i < t->nnames; i++)
        free(t->names[i].name);
    free(t->names);
    for (size_t i = 0; i < t->icap; i++)
        free(t->ivals[i]);
    free(t->ikeys);
    free(t->ivals);
    pthread_mutex_destroy(&t->lock);
    release_path(t);
    free(t->path);
    free(t->key);
    free(t->tmp_path);
    free(t);
}

void convoy__trace_discard(convoy__trace_t *t)
{
    if (t == NULL)
        return;
    close(t->fd);
    unlink(t->tmp_path);
    free_all(t);
}

/* The calling thread's buffer in t, found or made under the lock; NULL without memory. */
static tbuf_t *attach(convoy__trace_t *t)
{
    if (tls_serial == 0)
        tls_serial = atomic_fetch_add(&next_serial, 1);
    pthread_mutex_lock(&t->lock);
    tbuf_t *b = t->bufs;
    while (b != NULL && b->owner != tls_serial)
        b = b->next;
    if (b == NULL && (b = calloc(1, sizeof(*b))) != NULL) {
        b->owner = tls_serial;
        b->head = b->tail = convoy__trace_chunk_new(TRACE_CHUNK_MIN);
        if (b->head == NULL) {
            free(b);
            b = NULL;
        } else {
            b->next = t->bufs;
            t->bufs = b;
        }
    }
    pthread_mutex_unlock(&t->lock);
    if (b != NULL) {
        tls_gen = t->gen;
        tls_buf = b;
    }
    return b;
}

/* Grow the intern table (under t->lock); 0 on success. */
static int intern_grow(convoy__trace_t *t)
{
    size_t cap = t->icap ? 2 * t->icap : 64;
    const char **keys = calloc(cap, sizeof(*keys));
    char **vals = calloc(cap, sizeof(*vals));
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < t->icap; i++) {
        if (t->ikeys[i] == NULL)
            continue;
        size_t j = convoy__trace_ptr_hash(t->ikeys[i]) & (cap - 1);
        while (keys[j] != NULL)
            j = (j + 1) & (cap - 1);
        keys[j] = t->ikeys[i];
        vals[j] = t->ivals[i];
    }
    free(t->ikeys);
    free(t->ivals);
    t->ikeys = keys;
    t->ivals = vals;
    t->icap = cap;
    return 0;
}

/* intern's lookup and insertion under the lock, for a name not in b's cache (slot). */
static const char *intern_locked(convoy__trace_t *t, tbuf_t *b, const char *name, size_t slot)
{
    const char *val = NULL;
    pthread_mutex_lock(&t->lock);
    if (2 * (t->icount + 1) > t->icap && intern_grow(t) != 0)
        goto out;
    size_t j = convoy__trace_ptr_hash(name) & (t->icap - 1);
    while (t->ikeys[j] != NULL && t->ikeys[j] != name)
        j = (j + 1) & (t->icap - 1);
    if (t->ikeys[j] == NULL) {
        char *copy = strdup(name);
        if (copy == NULL)
            goto out;
        t->ikeys[j] = name;
        t->ivals[j] = copy;
        t->icount++;
    }
    val = t->ivals[j];
out:
    pthread_mutex_unlock(&t->lock);
    if (val != NULL) {
        b->cache[slot].key = name;
        b->cache[slot].val = val;
    }
    return val;
}

/* The trace's copy of name (same pointer, same copy); NULL without memory. Inline: the
 * per-buffer cache answers nearly every event. */
static inline const char *intern(convoy__trace_t *t, tbuf_t *b, const char *name)
{
    size_t slot = convoy__trace_ptr_hash(name) & (NAME_CACHE - 1);
    if (CONVOY__LIKELY(b->cache[slot].key == name))
        return b->cache[slot].val;
    return intern_locked(t, b, name, slot);
}

/* A fresh chunk linked after b's full tail (a ready one of the feeder's once chunks are
 * at their largest); NULL without memory. */
static chunk_t *chunk_next(convoy__trace_t *t, tbuf_t *b)
{
    chunk_t *c = b->tail;
    size_t bytes = CONVOY__MIN(2 * (size_t)c->bytes, TRACE_CHUNK_MAX);
    chunk_t *nc = bytes == TRACE_CHUNK_MAX ? convoy__trace_feed_take(t->feed) : NULL;
    if (nc == NULL)
        nc = convoy__trace_chunk_new(bytes);
    if (nc == NULL)
        return NULL;
    atomic_store_explicit(&c->next, nc, memory_order_release);
    b->tail = nc;
    return nc;
}

/* The chunk the calling thread's next event goes into, with room for one at least, and in
 * *n its count of events; NULL without memory. */
static inline chunk_t *chunk_with_room(convoy__trace_t *t, tbuf_t *b, unsigned *n)
{
    chunk_t *c = b->tail;
    *n = atomic_load_explicit(&c->n, memory_order_relaxed);
    if (CONVOY__LIKELY(*n < c->cap))
        return c;
    *n = 0;
    return chunk_next(t, b);
}

/* The calling thread's buffer in t, attached on its first event; NULL without memory. */
static tbuf_t *thread_buf(convoy__trace_t *t)
{
    return CONVOY__LIKELY(tls_gen == t->gen) ? tls_buf : attach(t);
}

/* Count n events of kind in b (the owner's store; readers load it relaxed). */
static void count_kind(tbuf_t *b, int kind, unsigned n)
{
    _Atomic uint64_t *cnt = &b->count[kind];
    atomic_store_explicit(cnt, atomic_load_explicit(cnt, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Record one event: a copy into the calling thread's buffer. Never blocks except the
 * first time a thread emits into a trace and when a name is seen for the first time. */
void convoy__trace_emit(convoy__trace_t *t, const convoy__trace_event_t *ev)
{
    tbuf_t *b = thread_buf(t);
    if (b == NULL || CONVOY__UNLIKELY(ev->kind >= NKINDS))
        goto drop;
    unsigned n;
    chunk_t *c = chunk_with_room(t, b, &n);
    if (c == NULL)
        goto drop;
    convoy__trace_event_t *e = &c->ev[n];
    *e = *ev;
    if (ev->name != NULL && (e->name = intern(t, b, ev->name)) == NULL)
        goto drop;
    atomic_store_explicit(&c->n, n + 1, memory_order_release);
    count_kind(b, ev->kind, 1);
    return;
drop:
    atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
}

void convoy__trace_emit_tasks(convoy__trace_t *t, const convoy__trace_event_t *tmpl,
                              const uint64_t *task_ids, int n)
{
    tbuf_t *b = thread_buf(t);
    convoy__trace_event_t ev = *tmpl;
    if (b == NULL || CONVOY__UNLIKELY(ev.kind >= NKINDS) ||
        (ev.name != NULL && (ev.name = intern(t, b, ev.name)) == NULL)) {
        atomic_fetch_add_explicit(&t->dropped, (uint64_t)n, memory_order_relaxed);
        return;
    }
    for (int done = 0; done < n;) {
        unsigned first;
        chunk_t *c = chunk_with_room(t, b, &first);
        if (c == NULL) {
            atomic_fetch_add_explicit(&t->dropped, (uint64_t)(n - done), memory_order_relaxed);
            return;
        }
        unsigned k = (unsigned)CONVOY__MIN((unsigned)(n - done), c->cap - first);
        for (unsigned i = 0; i < k; i++) {
            ev.task_id = task_ids[done + (int)i];
            c->ev[first + i] = ev;
        }
        atomic_store_explicit(&c->n, first + k, memory_order_release);
        count_kind(b, ev.kind, k);
        done += (int)k;
    }
}

void convoy__trace_name(convoy__trace_t *t, int pid, int tid, const char *name)
{
    tid = tid < 0 ? -1 : tid;
    char *copy = strdup(name != NULL ? name : "");
    pthread_mutex_lock(&t->lock);
    int i = 0; /* a later name of the same process or thread replaces the earlier one */
    while (i < t->nnames && (t->names[i].pid != pid || t->names[i].tid != tid))
        i++;
    if (copy != NULL && i == t->names_cap) {
        int cap = t->names_cap ? 2 * t->names_cap : 16;
        name_rec_t *names = realloc(t->names, (size_t)cap * sizeof(*names));
        if (names != NULL) {
            t->names = names;
            t->names_cap = cap;
        }
    }
    if (copy != NULL && i < t->names_cap) {
        if (i < t->nnames)
            free(t->names[i].name);
        else
            t->nnames++;
        t->names[i] = (name_rec_t){.pid = pid, .tid = tid, .name = copy};
        copy = NULL;
        name = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    if (name != NULL)
        convoy__log_warn("trace: out of memory naming pid %d tid %d", pid, tid);
    free(copy);
}

void convoy__trace_stop_feed(convoy__trace_t *t)
{
    convoy__trace_feed_stop(t->feed);
    t->feed = NULL;
}

uint64_t convoy__trace_fed(const convoy__trace_t *t, int *ready)
{
    return convoy__trace_feed_fed(t->feed, ready);
}

int convoy__trace_flows(const convoy__trace_t *t)
{
    return t->flows;
}

uint64_t convoy__trace_count(const convoy__trace_t *trace, convoy__trace_kind_t kind)
{
    convoy__trace_t *t = (convoy__trace_t *)trace; /* the lock is not part of the value */
    if ((unsigned)kind >= NKINDS)
        return 0;
    uint64_t sum = 0;
    pthread_mutex_lock(&t->lock);
    for (const tbuf_t *b = t->bufs; b != NULL; b = b->next)
        sum += atomic_load_explicit(&b->count[kind], memory_order_relaxed);
    pthread_mutex_unlock(&t->lock);
    return sum;
}

/* Write and free the trace. Every thread that emitted into it must be done emitting
 * (convoy_fini stops the workers and progress threads first); a thread's later emit
 * into another trace is safe (see the generation above). */
convoy_status_t convoy__trace_close(convoy__trace_t *t)
{
    if (t == NULL)
        return CONVOY_SUCCESS;
    convoy_status_t st = CONVOY_SUCCESS;
    uint64_t dropped = atomic_load(&t->dropped);
    if (dropped > 0)
        convoy__log_warn("trace: %" PRIu64 " events were lost (out of memory); %s is incomplete",
                         dropped, t->path);
    convoy__trace_stop_feed(t); /* its chunks are not needed any more */
    pthread_mutex_lock(&t->lock);
    int err = convoy__trace_write(t);
    if (err < 0) {
        st = convoy__error(NULL, CONVOY_ERR_NOMEM, "out of host memory writing the trace to %s",
                           t->path);
    } else {
        /* Closed on a failed write too (which left the descriptor open before). */
        if (close(t->fd) != 0 && err == 0)
            err = errno;
        t->fd = -1;
        if (err != 0)
            st = convoy__error(NULL, CONVOY_ERR_IO, "cannot write the trace to %s: %s", t->path,
                               strerror(err));
        else
            st = check_target(NULL, t->path); /* made since open? */
        if (st == CONVOY_SUCCESS && rename(t->tmp_path, t->path) != 0)
            st = convoy__error(NULL, CONVOY_ERR_IO, "cannot rename %s to %s: %s", t->tmp_path,
                               t->path, strerror(errno));
    }
    pthread_mutex_unlock(&t->lock);
    if (t->fd >= 0)
        close(t->fd);
    if (st != CONVOY_SUCCESS)
        unlink(t->tmp_path);
    free_all(t);
    return st;
}

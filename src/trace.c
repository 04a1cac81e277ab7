/*
 * The trace (see trace.h): per-thread event buffers, and the Chrome trace-event JSON
 * writer that runs once, at close.
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
 * Writing. At close every X event is put back in its lane's order and made serial (see
 * serialise_lane), task lifecycle events go to one lane of their own, flow arrows are
 * bound to the lifecycle events of both tasks, and the JSON is written to the temporary
 * file made at open and renamed over the path: a crash never leaves half a trace.
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

#include "device/device.h"
#include "src/trace.h"
#include "src/util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define TASKS_TID 32767 /* the task lifecycle lane of pid 0: above any worker index */
#define NKINDS (CONVOY__EV_FLOW + 1)
#define CHUNK_MIN (16u << 10)   /* bytes of a thread's first chunk; each next one doubles */
#define CHUNK_MAX (1u << 20)    /* ... up to this */
#define NAME_CACHE 16           /* per-buffer cache of interned names (a power of two) */
#define MAX_DUR_NS (1ull << 62) /* a longer duration is a clock wrap: written as 0 */

typedef struct chunk {
    _Atomic(struct chunk *) next;
    uint32_t cap;   /* events */
    uint32_t bytes; /* of the whole chunk */
    atomic_uint n;  /* events written; stored with release after each event */
    convoy__trace_event_t ev[];
} chunk_t;

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
    char *path, *tmp_path;
    int fd; /* the temporary file, open since trace_open */
    int flows;
    uint64_t t0_ns;
    _Atomic uint64_t dropped; /* events lost to a failed allocation */
};

static _Atomic uint64_t next_gen = 1;
static _Atomic uint64_t next_serial = 1;

/* The calling thread's buffer in the trace of generation tls_gen. */
static _Thread_local uint64_t tls_gen;
static _Thread_local tbuf_t *tls_buf;
static _Thread_local uint64_t tls_serial; /* 0 until the thread first emits */

static const char *const step_names[] = {"inserted",  "ready",  "staged-in", "executed",
                                         "completed", "failed", "cancelled"};
static const char *const stage_names[] = {"stage-in", "pushout", "evict"};

convoy_status_t convoy__trace_open(convoy_context_t *ctx, const char *path, int flows,
                                   convoy__trace_t **trace_p)
{
    if (path == NULL || path[0] == '\0')
        return convoy__error(ctx, CONVOY_ERR_INVALID, "trace: empty file name");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return convoy__error(ctx, CONVOY_ERR_IO, "cannot write the trace to %s: %s", path,
                             strerror(EISDIR));
    convoy__trace_t *t = convoy__calloc(ctx, 1, sizeof(*t), "the trace");
    if (t == NULL)
        return CONVOY_ERR_NOMEM;
    size_t len = strlen(path) + 32;
    convoy_status_t st = CONVOY_ERR_NOMEM;
    if ((t->path = strdup(path)) == NULL || (t->tmp_path = malloc(len)) == NULL) {
        convoy__error(ctx, st, "out of host memory for the trace's path");
        goto err;
    }
    snprintf(t->tmp_path, len, "%s.tmp.%ld", path, (long)getpid());
    t->fd = open(t->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (t->fd < 0) {
        st = convoy__error(ctx, CONVOY_ERR_IO, "cannot write the trace to %s: %s", path,
                           strerror(errno));
        goto err;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->gen = atomic_fetch_add(&next_gen, 1);
    t->flows = flows != 0;
    t->t0_ns = convoy__now_ns();
    *trace_p = t;
    return CONVOY_SUCCESS;
err:
    free(t->path);
    free(t->tmp_path);
    free(t);
    return st;
}

static void free_all(convoy__trace_t *t)
{
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
    free(t->path);
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

/* A chunk of about bytes bytes. (Asking for huge pages with madvise was tried: where
 * the kernel compacts memory on demand, it made emits slower and erratic.) */
static chunk_t *chunk_new(size_t bytes)
{
    chunk_t *c = malloc(bytes);
    if (c == NULL)
        return NULL;
    atomic_init(&c->next, NULL);
    atomic_init(&c->n, 0);
    c->cap = (uint32_t)((bytes - sizeof(*c)) / sizeof(convoy__trace_event_t));
    c->bytes = (uint32_t)bytes;
    return c;
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
        b->head = b->tail = chunk_new(CHUNK_MIN);
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

static size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(x ^ (x >> 32));
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
        size_t j = ptr_hash(t->ikeys[i]) & (cap - 1);
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

/* The trace's copy of name (same pointer, same copy); NULL without memory. */
static const char *intern(convoy__trace_t *t, tbuf_t *b, const char *name)
{
    size_t slot = ptr_hash(name) & (NAME_CACHE - 1);
    if (CONVOY__LIKELY(b->cache[slot].key == name))
        return b->cache[slot].val;
    const char *val = NULL;
    pthread_mutex_lock(&t->lock);
    if (2 * (t->icount + 1) > t->icap && intern_grow(t) != 0)
        goto out;
    size_t j = ptr_hash(name) & (t->icap - 1);
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

/* Record one event: a copy into the calling thread's buffer. Never blocks except the
 * first time a thread emits into a trace and when a name is seen for the first time. */
void convoy__trace_emit(convoy__trace_t *t, const convoy__trace_event_t *ev)
{
    tbuf_t *b = tls_buf;
    if (CONVOY__UNLIKELY(tls_gen != t->gen) && (b = attach(t)) == NULL)
        goto drop;
    if (CONVOY__UNLIKELY(ev->kind >= NKINDS))
        goto drop;
    chunk_t *c = b->tail;
    unsigned n = atomic_load_explicit(&c->n, memory_order_relaxed);
    if (CONVOY__UNLIKELY(n == c->cap)) {
        chunk_t *nc = chunk_new(CONVOY__MIN(2 * (size_t)c->bytes, CHUNK_MAX));
        if (nc == NULL)
            goto drop;
        atomic_store_explicit(&c->next, nc, memory_order_release);
        b->tail = c = nc;
        n = 0;
    }
    convoy__trace_event_t *e = &c->ev[n];
    *e = *ev;
    if (ev->name != NULL && (e->name = intern(t, b, ev->name)) == NULL)
        goto drop;
    atomic_store_explicit(&c->n, n + 1, memory_order_release);
    _Atomic uint64_t *cnt = &b->count[ev->kind];
    atomic_store_explicit(cnt, atomic_load_explicit(cnt, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return;
drop:
    atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
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

/* ------------------------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------------------- */

/* The output: a buffer written to the temporary file's descriptor when full. The JSON
 * is formatted by hand, which makes writing a large trace several times faster than
 * stdio's printf. */
typedef struct out {
    int fd;
    int err;    /* the first write error (errno), 0 while none */
    int events; /* events written so far: all but the first get a separator */
    size_t n;
    char buf[1 << 16];
} out_t;

/* Write len bytes to the file, recording the first error in o->err. */
static void write_all(out_t *o, const char *p, size_t len)
{
    for (size_t done = 0; done < len && o->err == 0;) {
        ssize_t w = write(o->fd, p + done, len - done);
        if (w < 0 && errno != EINTR)
            o->err = errno;
        else if (w > 0)
            done += (size_t)w;
    }
}

static void out_flush(out_t *o)
{
    write_all(o, o->buf, o->n);
    o->n = 0;
}

static void put_mem(out_t *o, const char *s, size_t len)
{
    if (o->n + len > sizeof(o->buf))
        out_flush(o);
    if (len > sizeof(o->buf)) {
        write_all(o, s, len); /* a name longer than the buffer */
        return;
    }
    memcpy(o->buf + o->n, s, len);
    o->n += len;
}

static void put_lit(out_t *o, const char *s)
{
    put_mem(o, s, strlen(s));
}

static void put_char(out_t *o, char c)
{
    if (o->n == sizeof(o->buf))
        out_flush(o);
    o->buf[o->n++] = c;
}

/* Start an event in the traceEvents array. */
static void put_sep(out_t *o)
{
    if (o->events++ > 0)
        put_mem(o, ",\n", 2);
}

static void put_u64(out_t *o, uint64_t v)
{
    char tmp[24];
    int i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    put_mem(o, tmp + i, sizeof(tmp) - (size_t)i);
}

static void put_i64(out_t *o, int64_t v)
{
    if (v < 0) {
        put_char(o, '-');
        put_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(o, (uint64_t)v);
    }
}

/* ,"key":value (the key is a literal without quotes to escape). */
static void put_key(out_t *o, const char *key)
{
    put_lit(o, ",\"");
    put_lit(o, key);
    put_lit(o, "\":");
}

/* ,"key":N.NNN — a time in microseconds, exact (the clock counts nanoseconds). */
static void put_us(out_t *o, const char *key, uint64_t ns)
{
    put_key(o, key);
    put_u64(o, ns / 1000);
    unsigned frac = (unsigned)(ns % 1000);
    char d[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                 (char)('0' + frac % 10)};
    put_mem(o, d, 4);
}

/* Write s as a JSON string: quotes, backslashes and control characters escaped, bytes
 * that are not valid UTF-8 replaced with U+FFFD so that every JSON parser accepts it. */
static void put_string(out_t *o, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    put_char(o, '"');
    while (*p != '\0') {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put_mem(o, e, 2);
            p++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put_mem(o, e, 6);
            p++;
        } else if (c < 0x80) {
            put_char(o, (char)c);
            p++;
        } else {
            /* A well-formed UTF-8 sequence: lead byte, then continuation bytes, no
             * overlong form, no surrogate, at most U+10FFFF. */
            int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            uint32_t cp = c & (len == 4 ? 0x07u : len == 3 ? 0x0fu : 0x1fu);
            int ok = len > 0 && c < 0xf5;
            for (int i = 1; ok && i < len; i++) {
                ok = (p[i] & 0xc0) == 0x80;
                cp = (cp << 6) | (p[i] & 0x3fu);
            }
            ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
                 !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
            if (ok) {
                put_mem(o, (const char *)p, (size_t)len);
                p += len;
            } else {
                put_lit(o, "\\ufffd");
                p++;
            }
        }
    }
    put_char(o, '"');
}

static uint64_t rel_ts(const convoy__trace_t *t, uint64_t ts_ns)
{
    return ts_ns > t->t0_ns ? ts_ns - t->t0_ns : 0;
}

/* {"ph":PH,"name":NAME,"cat":CAT,"pid":PID,"tid":TID,"ts":TS */
static void put_head(out_t *o, const convoy__trace_t *t, const char *ph, const char *name,
                     const char *cat, int pid, int tid, uint64_t ts_ns)
{
    put_sep(o);
    put_lit(o, "{\"ph\":\"");
    put_lit(o, ph);
    put_lit(o, "\",\"name\":");
    put_string(o, name);
    put_lit(o, ",\"cat\":\"");
    put_lit(o, cat);
    put_lit(o, "\",\"pid\":");
    put_i64(o, pid);
    put_lit(o, ",\"tid\":");
    put_i64(o, tid);
    put_us(o, "ts", rel_ts(t, ts_ns));
}

/* One X event; its ts and dur were made serial by serialise_lane, which left in
 * other_id how long the work waited behind earlier work on its lane. */
static void put_complete(out_t *o, const convoy__trace_t *t, const convoy__trace_event_t *e)
{
    const char *name, *cat;
    if (e->kind == CONVOY__EV_SUBMISSION) {
        name = e->stage < 3 ? stage_names[e->stage] : "copy";
        cat = "copy";
    } else {
        name = e->name != NULL ? e->name : "?";
        cat = e->kind == CONVOY__EV_LAUNCH ? "launch" : "cpu";
    }
    put_head(o, t, "X", name, cat, e->pid, e->tid, e->ts_ns);
    put_us(o, "dur", e->dur_ns);
    put_lit(o, ",\"args\":{\"ring\":");
    put_i64(o, e->ring_id);
    if (e->kind == CONVOY__EV_SUBMISSION) {
        put_key(o, "copies");
        put_i64(o, e->count);
        put_key(o, "bytes");
        put_u64(o, e->bytes);
        put_key(o, "method");
        put_string(o, convoy__copy_method_name(e->method));
        put_key(o, "split");
        put_lit(o, e->split ? "true" : "false");
    } else {
        if (e->kind == CONVOY__EV_CPU_TASK) {
            put_key(o, "task");
            put_u64(o, e->task_id);
        }
        put_key(o, "tasks");
        put_i64(o, e->count);
    }
    if (e->other_id > 0)
        put_us(o, "queued_us", e->other_id);
    put_lit(o, "}}");
}

/* Lifecycle times of one task, for binding flow arrows. */
typedef struct task_times {
    uint64_t id;
    uint64_t ready_ns, end_ns; /* 0: not seen */
    int used;
} task_times_t;

typedef struct task_map {
    task_times_t *slot;
    size_t cap;
} task_map_t;

static task_times_t *task_find(task_map_t *m, uint64_t id, int add)
{
    size_t j = ptr_hash((const void *)(uintptr_t)id) & (m->cap - 1);
    while (m->slot[j].used && m->slot[j].id != id)
        j = (j + 1) & (m->cap - 1);
    if (!m->slot[j].used) {
        if (!add)
            return NULL;
        m->slot[j] = (task_times_t){.id = id, .used = 1};
    }
    return &m->slot[j];
}

/* An arrow from a task to a successor: it leaves the source's last lifecycle event and
 * reaches the successor's 'ready' (or its end, when it never became ready). */
static void put_flow(out_t *o, const convoy__trace_t *t, const convoy__trace_event_t *e,
                     task_map_t *tasks, uint64_t id)
{
    uint64_t from = e->ts_ns, to = e->ts_ns;
    task_times_t *a = tasks->cap ? task_find(tasks, e->task_id, 0) : NULL;
    task_times_t *b = tasks->cap ? task_find(tasks, e->other_id, 0) : NULL;
    if (a != NULL && a->end_ns != 0)
        from = a->end_ns;
    if (b != NULL && (b->ready_ns != 0 || b->end_ns != 0))
        to = b->ready_ns != 0 ? b->ready_ns : b->end_ns;
    if (to < from)
        to = from;
    for (int k = 0; k < 2; k++) {
        put_head(o, t, k == 0 ? "s" : "f", "dep", "dep", 0, TASKS_TID, k == 0 ? from : to);
        put_key(o, "id");
        put_u64(o, id);
        put_lit(o, ",\"bp\":\"e\",\"args\":{\"task\":");
        put_u64(o, e->task_id);
        put_key(o, "successor");
        put_u64(o, e->other_id);
        put_lit(o, "}}");
    }
}

static void put_other(out_t *o, const convoy__trace_t *t, const convoy__trace_event_t *e,
                      task_map_t *tasks, uint64_t *flow_id)
{
    switch (e->kind) {
    case CONVOY__EV_TASK:
        put_head(o, t, "i", e->stage < 7 ? step_names[e->stage] : "step", "task", 0, TASKS_TID,
                 e->ts_ns);
        put_lit(o, ",\"s\":\"t\",\"args\":{\"task\":");
        put_u64(o, e->task_id);
        put_key(o, "ring");
        put_i64(o, e->ring_id);
        put_key(o, "class");
        put_string(o, e->name != NULL ? e->name : "?");
        put_lit(o, "}}");
        break;
    case CONVOY__EV_COUNTER:
        put_head(o, t, "C", e->name != NULL ? e->name : "counter", "counter", e->pid, e->tid,
                 e->ts_ns);
        put_lit(o, ",\"args\":{\"value\":");
        put_u64(o, e->bytes);
        put_lit(o, "}}");
        break;
    case CONVOY__EV_FLOW: put_flow(o, t, e, tasks, ++*flow_id); break;
    default: break;
    }
}

static int is_complete(const convoy__trace_event_t *e)
{
    return e->kind == CONVOY__EV_SUBMISSION || e->kind == CONVOY__EV_LAUNCH ||
           e->kind == CONVOY__EV_CPU_TASK;
}

static int cmp_lane(const void *pa, const void *pb)
{
    const convoy__trace_event_t *a = *(convoy__trace_event_t *const *)pa;
    const convoy__trace_event_t *b = *(convoy__trace_event_t *const *)pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->ts_ns != b->ts_ns)
        return a->ts_ns < b->ts_ns ? -1 : 1;
    return a->dur_ns > b->dur_ns ? -1 : a->dur_ns < b->dur_ns;
}

/*
 * Make the X events of one lane (sorted by start) serial. Every lane is a serial
 * resource: a stream runs its work in order, a CPU worker one chore at a time. But a
 * stream's event starts when the work was enqueued and ends when the progress thread
 * saw it complete, so consecutive events may overlap. Since work i finishes before
 * work i+1, min(end_j, j >= i) bounds end_i; and work i starts after work i-1 ends.
 * The result never overlaps, keeps every duration >= 0, and leaves in other_id the time
 * moved off the start (the wait behind earlier work, written as args.queued_us).
 */
static void serialise_lane(convoy__trace_event_t **ev, size_t n)
{
    uint64_t min_end = UINT64_MAX;
    for (size_t i = n; i-- > 0;) {
        convoy__trace_event_t *e = ev[i];
        uint64_t dur = e->dur_ns <= MAX_DUR_NS ? e->dur_ns : 0;
        uint64_t end = e->ts_ns + dur;
        if (end > min_end)
            end = min_end;
        min_end = end;
        e->dur_ns = end - e->ts_ns; /* end >= ts: see the comment */
    }
    uint64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        convoy__trace_event_t *e = ev[i];
        uint64_t end = e->ts_ns + e->dur_ns;
        uint64_t start = CONVOY__MAX(e->ts_ns, prev_end);
        e->other_id = start - e->ts_ns;
        e->ts_ns = start;
        e->dur_ns = end - start;
        prev_end = end;
    }
}

static void put_meta(out_t *o, const char *what, int pid, int tid, const char *name)
{
    put_sep(o);
    put_lit(o, "{\"ph\":\"M\",\"name\":\"");
    put_lit(o, what);
    put_lit(o, "\",\"pid\":");
    put_i64(o, pid);
    put_lit(o, ",\"tid\":");
    put_i64(o, tid);
    put_lit(o, ",\"args\":{\"name\":");
    put_string(o, name);
    put_lit(o, "}}");
}

/* Every event e recorded in t (three nested loops: 'continue' works, 'break' does not). */
#define FOR_EACH_EVENT(t, e)                                                                       \
    for (tbuf_t *b_ = (t)->bufs; b_ != NULL; b_ = b_->next)                                        \
        for (chunk_t *c_ = b_->head; c_ != NULL;                                                   \
             c_ = atomic_load_explicit(&c_->next, memory_order_acquire))                           \
            for (convoy__trace_event_t *e = c_->ev, *end_ = e + atomic_load_explicit(              \
                                                                    &c_->n, memory_order_acquire); \
                 e < end_; e++)

/* Write every event; 0 on success, -1 without memory. */
static int write_events(convoy__trace_t *t, out_t *f)
{
    size_t total = 0, nx = 0, ntask = 0;
    FOR_EACH_EVENT(t, e)
    {
        total++;
        nx += is_complete(e);
        ntask += e->kind == CONVOY__EV_TASK;
    }
    convoy__trace_event_t **xs = malloc((nx ? nx : 1) * sizeof(*xs));
    task_map_t tasks = {0};
    if (t->flows && ntask > 0) {
        tasks.cap = 64;
        while (tasks.cap < 2 * ntask)
            tasks.cap *= 2;
        tasks.slot = calloc(tasks.cap, sizeof(*tasks.slot));
    }
    if (xs == NULL || (tasks.cap > 0 && tasks.slot == NULL)) {
        free(xs);
        free(tasks.slot);
        return -1;
    }
    size_t k = 0;
    FOR_EACH_EVENT(t, e)
    {
        if (is_complete(e)) {
            xs[k++] = e;
        } else if (e->kind == CONVOY__EV_TASK && tasks.cap > 0) {
            task_times_t *tt = task_find(&tasks, e->task_id, 1);
            if (e->stage == CONVOY__STEP_READY)
                tt->ready_ns = e->ts_ns;
            else if (e->stage >= CONVOY__STEP_COMPLETED)
                tt->end_ns = e->ts_ns;
        }
    }
    qsort(xs, nx, sizeof(*xs), cmp_lane);
    for (size_t i = 0, j; i < nx; i = j) {
        for (j = i + 1; j < nx && xs[j]->pid == xs[i]->pid && xs[j]->tid == xs[i]->tid; j++) {
        }
        serialise_lane(&xs[i], j - i);
    }

    put_lit(f, "{\"traceEvents\":[\n");
    int named_cpus = 0;
    for (int i = 0; i < t->nnames; i++) {
        const name_rec_t *r = &t->names[i];
        named_cpus |= r->pid == 0 && r->tid < 0;
        put_meta(f, r->tid < 0 ? "process_name" : "thread_name", r->pid, r->tid < 0 ? 0 : r->tid,
                 r->name);
    }
    if (!named_cpus)
        put_meta(f, "process_name", 0, 0, "cpus");
    put_meta(f, "thread_name", 0, TASKS_TID, "tasks");
    for (size_t i = 0; i < nx; i++)
        put_complete(f, t, xs[i]);
    uint64_t flow_id = 0;
    FOR_EACH_EVENT(t, e)
    {
        if (!is_complete(e))
            put_other(f, t, e, &tasks, &flow_id);
    }
    put_lit(f, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"convoy_version\":");
    put_string(f, PACKAGE_VERSION);
    put_key(f, "events");
    put_u64(f, total);
    put_key(f, "dropped_events");
    put_u64(f, atomic_load(&t->dropped));
    put_lit(f, "}}\n");
    free(xs);
    free(tasks.slot);
    return 0;
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
    out_t *o = malloc(sizeof(*o));
    if (o != NULL)
        *o = (out_t){.fd = t->fd};
    pthread_mutex_lock(&t->lock);
    if (o == NULL || write_events(t, o) != 0) {
        st = convoy__error(NULL, CONVOY_ERR_NOMEM, "out of host memory writing the trace to %s",
                           t->path);
    } else {
        out_flush(o);
        if (o->err == 0 && close(t->fd) != 0)
            o->err = errno;
        t->fd = -1;
        if (o->err != 0)
            st = convoy__error(NULL, CONVOY_ERR_IO, "cannot write the trace to %s: %s", t->path,
                               strerror(o->err));
        else if (rename(t->tmp_path, t->path) != 0)
            st = convoy__error(NULL, CONVOY_ERR_IO, "cannot rename %s to %s: %s", t->tmp_path,
                               t->path, strerror(errno));
    }
    pthread_mutex_unlock(&t->lock);
    free(o);
    if (t->fd >= 0)
        close(t->fd);
    if (st != CONVOY_SUCCESS)
        unlink(t->tmp_path);
    free_all(t);
    return st;
}

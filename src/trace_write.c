/*
 * The trace's writer (see trace.h and trace_impl.h): the Chrome trace-event JSON written
 * once, at close, from the events that trace.c recorded.
 *
 * At close every X event is put back in its lane's order and made serial (see
 * serialise_lane), task lifecycle events go to one lane of their own, flow arrows are
 * bound to the lifecycle events of both tasks, and the JSON is written to the temporary
 * file made at open, which convoy__trace_close renames over the path.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/device.h"
#include "src/trace.h"
#include "src/trace_impl.h"
#include "src/util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* Recorded pid p and tid t are written as p + 1 and t + 1: Perfetto takes pid 0 and tid 0
 * for the kernel's idle task (swapper), so the CPUs (pid 0) and worker 0 would merge with
 * it. Writing a number once, here, keeps the recorders' numbering (trace.h) simple. */
#define OUT_ID(x) ((int64_t)(x) + 1)
#define TASKS_TID 32766         /* the task lifecycle lane of pid 0 (written 32767) */
#define MSGS_TID 32765          /* the messages lane of pid 0 (distributed mode) */
#define MAX_DUR_NS (1ull << 62) /* a longer duration is a clock wrap: written as 0 */

static const char *const step_names[] = {"inserted",  "ready",  "staged-in", "executed",
                                         "completed", "failed", "cancelled"};
static const char *const stage_names[] = {"stage-in", "pushout", "evict"};

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
    put_i64(o, OUT_ID(pid));
    put_lit(o, ",\"tid\":");
    put_i64(o, OUT_ID(tid));
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
        cat = e->kind == CONVOY__EV_LAUNCH     ? "launch"
              : e->kind == CONVOY__EV_PROGRESS ? "progress"
                                               : "cpu";
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
    } else if (e->kind == CONVOY__EV_PROGRESS) {
        put_key(o, "count");
        put_i64(o, e->count);
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
    size_t j = convoy__trace_ptr_hash((const void *)(uintptr_t)id) & (m->cap - 1);
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
    case CONVOY__EV_MESSAGE:
        put_head(o, t, "i", e->stage == 0 ? "send" : "receive", "message", 0, MSGS_TID, e->ts_ns);
        put_lit(o, ",\"s\":\"t\",\"args\":{\"peer\":");
        put_u64(o, e->other_id);
        put_key(o, "flows");
        put_i64(o, e->count);
        put_key(o, "bytes");
        put_u64(o, e->bytes);
        put_lit(o, "}}");
        break;
    default: break;
    }
}

static int is_complete(const convoy__trace_event_t *e)
{
    return e->kind == CONVOY__EV_SUBMISSION || e->kind == CONVOY__EV_LAUNCH ||
           e->kind == CONVOY__EV_CPU_TASK || e->kind == CONVOY__EV_PROGRESS;
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
    put_i64(o, OUT_ID(pid));
    put_lit(o, ",\"tid\":");
    put_i64(o, OUT_ID(tid));
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
    size_t total = 0, nx = 0, ntask = 0, nmsg = 0;
    FOR_EACH_EVENT(t, e)
    {
        total++;
        nmsg += e->kind == CONVOY__EV_MESSAGE;
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
    if (nmsg > 0)
        put_meta(f, "thread_name", 0, MSGS_TID, "messages");
    for (size_t i = 0; i < nx; i++)
        put_complete(f, t, xs[i]);
    /* Flow events last: Perfetto binds a flow event to the slice open on its track when
     * it reads it, so the lifecycle instant it leaves or reaches (at the same timestamp)
     * must come earlier in the file. */
    uint64_t flow_id = 0;
    for (int flows = 0; flows < 2; flows++)
        FOR_EACH_EVENT(t, e)
        {
            if (!is_complete(e) && (e->kind == CONVOY__EV_FLOW) == flows)
                put_other(f, t, e, &tasks, &flow_id);
        }
    /* No displayTimeUnit: older trace processors read "ns" as the unit of ts itself. */
    put_lit(f, "\n],\"otherData\":{\"convoy_version\":");
    put_string(f, PACKAGE_VERSION);
    put_key(f, "events");
    put_u64(f, total);
    put_key(f, "dropped_events");
    put_u64(f, atomic_load(&t->dropped));
    /* Where ts 0 is on CLOCK_MONOTONIC, one clock for every process of a host: lets
     * convoy-trace merge align the ranks of a distributed run. */
    put_key(f, "clock_origin_ns");
    put_u64(f, t->t0_ns);
    put_lit(f, "}}\n");
    free(xs);
    free(tasks.slot);
    return 0;
}

/* Write the trace to its temporary file (see trace_impl.h). */
int convoy__trace_write(convoy__trace_t *t)
{
    out_t *o = malloc(sizeof(*o));
    if (o == NULL)
        return -1;
    *o = (out_t){.fd = t->fd};
    int err = -1;
    if (write_events(t, o) == 0) {
        out_flush(o);
        err = o->err;
    }
    free(o);
    return err;
}

/*
 * Reading convoy traces (see trace_read.h). The top level of the document (an object
 * holding "traceEvents", or a bare array of events) is scanned here, and each event is
 * parsed on its own by jansson, checked and turned into a flat record: memory stays near
 * the input's size (a whole-document parse takes about 15 times as much). Every event
 * convoy-trace uses must have the fields it needs, with the right types and sane values.
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_read.h"

#define MAX_TIME_US 1e15 /* 31 years: a larger |ts| or dur is not a run's */

const char *const convoy__tr_step_names[CONVOY__TR_NSTEPS] = {
    "inserted", "ready", "staged-in", "executed", "completed", "failed", "cancelled"};
const char *const convoy__tr_stage_names[CONVOY__TR_NSTAGES] = {"stage-in", "pushout", "evict"};
const char *const convoy__tr_method_names[CONVOY__TR_NMETHODS] = {"loop", "engine", "sm", "auto",
                                                                  "other"};

/* ------------------------------------------------------------------------------------
 * Strings: copied into blocks owned by the trace. A small cache shares the copies of
 * repeated names; a miss only costs a copy, so no input can make this slow.
 * ---------------------------------------------------------------------------------- */

#define BLOCK_BYTES (64u << 10)
#define STR_CACHE 256

struct convoy__tr_block {
    struct convoy__tr_block *next;
    size_t used, cap;
    char data[];
};

static size_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ len;
    for (size_t i = 0; i < len && i < 32; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

/* The trace's copy of s (NULL without memory). */
static const char *str_copy(convoy__tr_trace_t *t, const char **cache, const char *s)
{
    size_t len = strlen(s);
    const char **slot = &cache[str_hash(s, len) & (STR_CACHE - 1)];
    if (*slot != NULL && strcmp(*slot, s) == 0)
        return *slot;
    struct convoy__tr_block *b = t->strings;
    if (b == NULL || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > BLOCK_BYTES ? len + 1 : BLOCK_BYTES;
        if ((b = malloc(sizeof(*b) + cap)) == NULL)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = t->strings;
        t->strings = b;
    }
    char *copy = memcpy(b->data + b->used, s, len + 1);
    b->used += len + 1;
    return *slot = copy;
}

void convoy__tr_free(convoy__tr_trace_t *t)
{
    if (t == NULL)
        return;
    free(t->label);
    free(t->ev);
    free(t->names);
    while (t->strings != NULL) {
        struct convoy__tr_block *b = t->strings;
        t->strings = b->next;
        free(b);
    }
    free(t);
}

/* ------------------------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------------------- */

typedef struct parse {
    convoy__tr_trace_t *t;
    const char *label;
    const char *buf; /* the input */
    size_t len, pos;
    const char *cache[STR_CACHE];
    char *err;
    size_t errlen;
    size_t index; /* of the event being read */
    json_t *ev;   /* the event being read */
    size_t cap_ev, cap_names;
} parse_t;

static int fail(parse_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record "LABEL: [event N (ph 'PH', name 'NAME'): ]message" and return -1. */
static int fail(parse_t *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (p->ev != NULL) {
        const char *ph = json_string_value(json_object_get(p->ev, "ph"));
        const char *name = json_string_value(json_object_get(p->ev, "name"));
        snprintf(p->err, p->errlen, "%s: event %zu (ph '%.8s', name '%.60s'): %s", p->label,
                 p->index, ph ? ph : "?", name ? name : "?", msg);
    } else {
        snprintf(p->err, p->errlen, "%s: %s", p->label, msg);
    }
    for (char *c = p->err; *c != '\0'; c++)         /* names come from the input: no control */
        if ((unsigned char)*c < 0x20 || *c == 0x7f) /* characters reach a terminal */
            *c = '?';
    return -1;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* obj.key (obj may be NULL: "args" missing); NULL with an error when required. */
static json_t *field(parse_t *p, json_t *obj, const char *where, const char *key, int required,
                     int *rc)
{
    json_t *v = obj != NULL ? json_object_get(obj, key) : NULL;
    if (v == NULL && required)
        *rc = fail(p, "'%s%s' is missing", where, key);
    return v;
}

/* A number in [lo, hi] (integer or real). */
static int get_num(parse_t *p, json_t *obj, const char *where, const char *key, int required,
                   double lo, double hi, double *out)
{
    int rc = 0;
    json_t *v = field(p, obj, where, key, required, &rc);
    if (v == NULL)
        return rc;
    if (!json_is_number(v))
        return fail(p, "'%s%s' must be a number, not %s", where, key, type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return fail(p, "'%s%s' is %g, out of [%g, %g]", where, key, x, lo, hi);
    *out = x;
    return 0;
}

/* An integer in [lo, hi]. */
static int get_int(parse_t *p, json_t *obj, const char *where, const char *key, int required,
                   json_int_t lo, json_int_t hi, int64_t *out)
{
    int rc = 0;
    json_t *v = field(p, obj, where, key, required, &rc);
    if (v == NULL)
        return rc;
    if (!json_is_integer(v))
        return fail(p, "'%s%s' must be an integer, not %s", where, key, type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return fail(p,
                    "'%s%s' is %" JSON_INTEGER_FORMAT ", out of [%" JSON_INTEGER_FORMAT
                    ", %" JSON_INTEGER_FORMAT "]",
                    where, key, x, lo, hi);
    *out = x;
    return 0;
}

static int get_str(parse_t *p, json_t *obj, const char *where, const char *key, int required,
                   const char **out)
{
    int rc = 0;
    json_t *v = field(p, obj, where, key, required, &rc);
    if (v == NULL)
        return rc;
    if (!json_is_string(v))
        return fail(p, "'%s%s' must be a string, not %s", where, key, type_name(v));
    if ((*out = str_copy(p->t, p->cache, json_string_value(v))) == NULL)
        return fail(p, "out of memory");
    return 0;
}

static int index_of(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

static int read_meta(parse_t *p, json_t *e)
{
    const char *what = json_string_value(json_object_get(e, "name"));
    if (what == NULL || (strcmp(what, "process_name") != 0 && strcmp(what, "thread_name") != 0))
        return 0; /* other metadata (sort indexes...) is not used */
    int64_t pid = 0, tid = 0;
    const char *name = NULL;
    json_t *args = json_object_get(e, "args");
    if (args != NULL && !json_is_object(args))
        return fail(p, "'args' must be an object, not %s", type_name(args));
    if (get_int(p, e, "", "pid", 1, INT32_MIN, INT32_MAX, &pid) ||
        get_int(p, e, "", "tid", what[0] == 't', INT32_MIN, INT32_MAX, &tid) ||
        get_str(p, args, "args.", "name", 1, &name))
        return -1;
    convoy__tr_trace_t *t = p->t;
    if (t->nnames == p->cap_names) {
        size_t cap = p->cap_names ? 2 * p->cap_names : 16;
        convoy__tr_lane_name_t *n = realloc(t->names, cap * sizeof(*n));
        if (n == NULL)
            return fail(p, "out of memory");
        t->names = n;
        p->cap_names = cap;
    }
    t->names[t->nnames++] = (convoy__tr_lane_name_t){
        .pid = (int32_t)pid, .tid = what[0] == 'p' ? -1 : (int32_t)tid, .name = name};
    return 0;
}

/* The fields each category needs; see src/trace_write.c for what convoy writes. */
static int read_args(parse_t *p, json_t *args, convoy__tr_event_t *ev)
{
    const char *s = NULL;
    int split = 0;
    switch (ev->cat) {
    case CONVOY__TR_COPY:
        if ((ev->stage = (int8_t)index_of(convoy__tr_stage_names, CONVOY__TR_NSTAGES, ev->name)) <
            0)
            return fail(p, "a copy event's name must be stage-in, pushout or evict");
        if (get_int(p, args, "args.", "ring", 1, -1, INT64_MAX, &ev->ring) ||
            get_int(p, args, "args.", "copies", 1, 0, INT32_MAX, &ev->count) ||
            get_int(p, args, "args.", "bytes", 1, 0, INT64_MAX, (int64_t *)&ev->bytes) ||
            get_str(p, args, "args.", "method", 1, &s))
            return -1;
        int m = index_of(convoy__tr_method_names, CONVOY__TR_NMETHODS - 1, s);
        ev->method = (int8_t)(m < 0 ? CONVOY__TR_NMETHODS - 1 : m);
        json_t *v = json_object_get(args, "split");
        if (v == NULL || !json_is_boolean(v))
            return fail(p, "'args.split' must be a boolean, not %s",
                        v != NULL ? type_name(v) : "missing");
        split = json_is_true(v);
        ev->split = (uint8_t)split;
        return get_num(p, args, "args.", "queued_us", 0, 0, MAX_TIME_US, &ev->queued);
    case CONVOY__TR_LAUNCH:
        return get_int(p, args, "args.", "ring", 1, -1, INT64_MAX, &ev->ring) ||
                       get_int(p, args, "args.", "tasks", 1, 0, INT32_MAX, &ev->count) ||
                       get_num(p, args, "args.", "queued_us", 0, 0, MAX_TIME_US, &ev->queued)
                   ? -1
                   : 0;
    case CONVOY__TR_CPU:
        return get_int(p, args, "args.", "ring", 1, -1, INT64_MAX, &ev->ring) ||
                       get_int(p, args, "args.", "task", 1, 0, INT64_MAX, &ev->task) ||
                       get_int(p, args, "args.", "tasks", 1, 0, INT32_MAX, &ev->count)
                   ? -1
                   : 0;
    case CONVOY__TR_TASK:
        if ((ev->step = (int8_t)index_of(convoy__tr_step_names, CONVOY__TR_NSTEPS, ev->name)) < 0)
            return fail(p, "unknown task step (not one of inserted, ready, staged-in, executed, "
                           "completed, failed, cancelled)");
        return get_int(p, args, "args.", "task", 1, 0, INT64_MAX, &ev->task) ||
                       get_int(p, args, "args.", "ring", 1, -1, INT64_MAX, &ev->ring) ||
                       get_str(p, args, "args.", "class", 0, &ev->cls)
                   ? -1
                   : 0;
    case CONVOY__TR_PROGRESS:
        return get_int(p, args, "args.", "ring", 1, -1, INT64_MAX, &ev->ring) ||
                       get_int(p, args, "args.", "count", 1, 0, INT32_MAX, &ev->count)
                   ? -1
                   : 0;
    case CONVOY__TR_MESSAGE:
        if (strcmp(ev->name, "send") != 0 && strcmp(ev->name, "receive") != 0)
            return fail(p, "a message event's name must be send or receive");
        ev->stage = (int8_t)(ev->name[0] == 'r'); /* 0 sent, 1 received */
        return get_int(p, args, "args.", "peer", 1, 0, INT32_MAX, &ev->task) ||
                       get_int(p, args, "args.", "flows", 1, 0, INT32_MAX, &ev->count) ||
                       get_int(p, args, "args.", "bytes", 1, 0, INT64_MAX, (int64_t *)&ev->bytes)
                   ? -1
                   : 0;
    default: return 0;
    }
}

static int read_event(parse_t *p, json_t *e)
{
    if (!json_is_object(e))
        return fail(p, "event %zu is %s, not an object", p->index, type_name(e));
    p->ev = e;
    const char *ph = NULL, *cat = NULL;
    if (get_str(p, e, "", "ph", 1, &ph))
        return -1;
    if (strcmp(ph, "M") == 0)
        return read_meta(p, e);
    if (ph[0] == '\0' || strchr("XiICsf", ph[0]) == NULL || ph[1] != '\0')
        return 0; /* phases convoy does not write are skipped */
    json_t *args = json_object_get(e, "args");
    if (args != NULL && !json_is_object(args))
        return fail(p, "'args' must be an object, not %s", type_name(args));
    convoy__tr_event_t ev = {.ph = ph[0] == 'I' ? 'i' : ph[0],
                             .cat = CONVOY__TR_OTHER,
                             .step = -1,
                             .stage = -1,
                             .ring = -1,
                             .task = -1};
    int64_t pid = 0, tid = 0;
    if (get_str(p, e, "", "name", ev.ph != 'C' && ev.ph != 's' && ev.ph != 'f', &ev.name) ||
        get_str(p, e, "", "cat", 0, &cat) ||
        get_num(p, e, "", "ts", 1, -MAX_TIME_US, MAX_TIME_US, &ev.ts) ||
        get_int(p, e, "", "pid", 1, INT32_MIN, INT32_MAX, &pid) ||
        get_int(p, e, "", "tid", ev.ph != 'C', INT32_MIN, INT32_MAX, &tid))
        return -1;
    ev.pid = (int32_t)pid;
    ev.tid = (int32_t)tid;
    if (ev.ph == 'X') {
        if (get_num(p, e, "", "dur", 1, -INFINITY, INFINITY, &ev.dur))
            return -1;
        if (ev.dur < 0 || ev.dur > MAX_TIME_US)
            return fail(p, "'dur' is %g: a duration must be in [0, %g] us", ev.dur, MAX_TIME_US);
        if (cat != NULL && strcmp(cat, "copy") == 0)
            ev.cat = CONVOY__TR_COPY;
        else if (cat != NULL && strcmp(cat, "launch") == 0)
            ev.cat = CONVOY__TR_LAUNCH;
        else if (cat != NULL && strcmp(cat, "cpu") == 0)
            ev.cat = CONVOY__TR_CPU;
        else if (cat != NULL && strcmp(cat, "progress") == 0)
            ev.cat = CONVOY__TR_PROGRESS;
    } else if (ev.ph == 'i' && cat != NULL && strcmp(cat, "task") == 0) {
        ev.cat = CONVOY__TR_TASK;
    } else if (ev.ph == 'i' && cat != NULL && strcmp(cat, "message") == 0) {
        ev.cat = CONVOY__TR_MESSAGE;
    } else if (ev.ph == 'C') {
        ev.cat = CONVOY__TR_COUNTER;
        if (args == NULL)
            return fail(p, "a counter event needs 'args'");
    }
    if (ev.cat != CONVOY__TR_OTHER && ev.cat != CONVOY__TR_COUNTER && args == NULL)
        return fail(p, "'args' is missing");
    if (read_args(p, args, &ev))
        return -1;
    convoy__tr_trace_t *t = p->t;
    if (t->nev == p->cap_ev) {
        size_t cap = p->cap_ev ? 2 * p->cap_ev : 1024;
        convoy__tr_event_t *n = realloc(t->ev, cap * sizeof(*n));
        if (n == NULL)
            return fail(p, "out of memory");
        t->ev = n;
        p->cap_ev = cap;
    }
    t->ev[t->nev++] = ev;
    return 0;
}

/* ---- the top level ---- */

static void skip_ws(parse_t *p)
{
    while (p->pos < p->len && p->buf[p->pos] != '\0' && strchr(" \t\r\n", p->buf[p->pos]))
        p->pos++;
}

/* Where the JSON value starting at p->pos ends (without checking it: jansson does):
 * after its closing quote or bracket, or before the delimiter that ends a scalar. */
static size_t value_end(const parse_t *p)
{
    const char *b = p->buf;
    size_t i = p->pos, depth = 0;
    if (i < p->len && b[i] != '"' && b[i] != '{' && b[i] != '[') {
        while (i < p->len && strchr(",:]} \t\r\n", b[i]) == NULL)
            i++;
        return i;
    }
    for (; i < p->len; i++) {
        if (b[i] == '"') {
            for (i++; i < p->len && b[i] != '"'; i++)
                if (b[i] == '\\')
                    i++;
            if (depth == 0)
                return i < p->len ? i + 1 : p->len;
        } else if (b[i] == '{' || b[i] == '[') {
            depth++;
        } else if ((b[i] == '}' || b[i] == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return p->len;
}

/* "not valid JSON (line L, column C): why" for an error at byte offset at. */
static int fail_at(parse_t *p, size_t at, const char *why)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < p->len; i++, col++)
        if (p->buf[i] == '\n') {
            line++;
            col = 0;
        }
    p->ev = NULL;
    return fail(p, "not valid JSON (line %zu, column %zu): %s", line, col, why);
}

/* Parse the value at p->pos with jansson and move past it; NULL after an error. */
static json_t *next_value(parse_t *p)
{
    if (p->pos >= p->len) {
        fail_at(p, p->len, "premature end of input");
        return NULL;
    }
    size_t end = value_end(p);
    json_error_t jerr;
    json_t *v = json_loadb(p->buf + p->pos, end - p->pos, JSON_DECODE_ANY, &jerr);
    if (v == NULL) {
        fail_at(p, p->pos + (size_t)(jerr.position > 0 ? jerr.position : 0), jerr.text);
        return NULL;
    }
    p->pos = end;
    return v;
}

/* After optional white space, one of the characters in chars (described by what):
 * return it, or 0 after an error. */
static char expect(parse_t *p, const char *chars, const char *what)
{
    skip_ws(p);
    char c = p->pos < p->len ? p->buf[p->pos] : '\0';
    if (c == '\0' || strchr(chars, c) == NULL) {
        char why[128];
        snprintf(why, sizeof(why), "expected %s", what);
        fail_at(p, p->pos, why);
        return 0;
    }
    p->pos++;
    return c;
}

/* The events array, p->pos just after its '['. */
static int read_events(parse_t *p)
{
    skip_ws(p);
    if (p->pos < p->len && p->buf[p->pos] == ']') {
        p->pos++;
        return 0;
    }
    for (p->index = 0;; p->index++) {
        skip_ws(p);
        json_t *e = next_value(p);
        if (e == NULL)
            return -1;
        int rc = read_event(p, e);
        p->ev = NULL;
        json_decref(e);
        if (rc != 0)
            return -1;
        char c = expect(p, ",]", "',' or ']' after an event");
        if (c != ',')
            return c == ']' ? 0 : -1;
    }
}

/* The document: {"traceEvents": [...], ...} or [...]. */
static int read_document(parse_t *p)
{
    char c = expect(p, "{[", "'{' or '[' at the start of a trace");
    if (c == 0)
        return -1;
    int seen = c == '[';
    skip_ws(p);
    if (c == '[') {
        if (read_events(p) != 0)
            return -1;
    } else if (p->pos < p->len && p->buf[p->pos] == '}') {
        p->pos++;
    } else {
        do {
            skip_ws(p);
            if (p->pos < p->len && p->buf[p->pos] != '"')
                return fail_at(p, p->pos, "expected a string (an object key)");
            json_t *key = next_value(p);
            if (key == NULL)
                return -1;
            int events = strcmp(json_string_value(key), "traceEvents") == 0;
            json_decref(key);
            if (!expect(p, ":", "':' after a key"))
                return -1;
            skip_ws(p);
            if (events && seen++)
                return fail(p, "'traceEvents' appears twice");
            if (events && p->pos < p->len && p->buf[p->pos] == '[') {
                p->pos++;
                if (read_events(p) != 0)
                    return -1;
                continue;
            }
            json_t *v = next_value(p); /* checked, then dropped */
            if (v == NULL)
                return -1;
            const char *type = type_name(v);
            json_decref(v);
            if (events)
                return fail(p, "'traceEvents' must be an array, not %s", type);
        } while ((c = expect(p, ",}", "',' or '}' in the top-level object")) == ',');
        if (c == 0)
            return -1;
    }
    if (!seen)
        return fail(p, "no 'traceEvents' array: not a Chrome trace-event file");
    skip_ws(p);
    return p->pos < p->len ? fail_at(p, p->pos, "data after the end of the trace") : 0;
}

int convoy__tr_parse(const void *data, size_t len, const char *label, convoy__tr_trace_t **trace_p,
                     char *err, size_t errlen)
{
    parse_t p = {.label = label != NULL ? label : "(input)",
                 .err = err,
                 .errlen = errlen,
                 .buf = data,
                 .len = len};
    convoy__tr_trace_t *t = calloc(1, sizeof(*t));
    if (t == NULL || (t->label = strdup(p.label)) == NULL) {
        convoy__tr_free(t);
        return fail(&p, "out of memory");
    }
    p.t = t;
    if (read_document(&p) != 0) {
        convoy__tr_free(t);
        return -1;
    }
    *trace_p = t;
    return 0;
}

int convoy__tr_load(const char *path, convoy__tr_trace_t **trace_p, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            char *n = realloc(buf, cap);
            if (n == NULL) {
                snprintf(err, errlen, "%s: out of memory reading it", path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = n;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e));
        free(buf);
        return -1;
    }
    int rc = convoy__tr_parse(buf, len, path, trace_p, err, errlen);
    free(buf);
    return rc;
}

void convoy__tr_proc_label(const convoy__tr_trace_t *t, int32_t pid, char *buf, size_t len)
{
    for (size_t i = t->nnames; i-- > 0;)
        if (t->names[i].pid == pid && t->names[i].tid == -1) {
            snprintf(buf, len, "%s", t->names[i].name);
            return;
        }
    snprintf(buf, len, "pid %d", (int)pid);
}

void convoy__tr_lane_label(const convoy__tr_trace_t *t, int32_t pid, int32_t tid, char *buf,
                           size_t len)
{
    char pn[96];
    convoy__tr_proc_label(t, pid, pn, sizeof(pn));
    for (size_t i = t->nnames; i-- > 0;)
        if (t->names[i].pid == pid && t->names[i].tid == tid && tid != -1) {
            snprintf(buf, len, "%s / %s", pn, t->names[i].name);
            return;
        }
    snprintf(buf, len, "%s / tid %d", pn, (int)tid);
}

/*
 * convoy-trace merge: the per-rank traces of a distributed run (trace=run.%r.json) in one
 * file, for one timeline. Input k (in the order given: rank k) keeps its lanes under
 * pids k * 1000 + pid, its processes named "rank k: NAME", and flow ids made unique
 * across the inputs. Traces that record where their clock started (otherData's
 * clock_origin_ns, CLOCK_MONOTONIC: one clock for every process of a host) are aligned
 * on it; otherwise each keeps its own origin and the merge says so.
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_read.h"

#define PID_STRIDE 1000

/* The events array of a parsed trace (an object's traceEvents, or a bare array). */
static json_t *events_of(json_t *root)
{
    return json_is_array(root) ? root : json_object_get(root, "traceEvents");
}

static int origin_of(json_t *root, json_int_t *origin)
{
    json_t *v = json_is_object(root)
                    ? json_object_get(json_object_get(root, "otherData"), "clock_origin_ns")
                    : NULL;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *origin = json_integer_value(v);
    return 0;
}

/* Rewrite input k's events in place (pids, names, flow ids, times) and move them to
 * out. Returns 0, or -1 with err set. */
static int take_events(json_t *evs, int k, int n, double shift_us, const char *label, json_t *out,
                       char *err, size_t errlen)
{
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e)
    {
        json_t *pid = json_object_get(e, "pid");
        if (json_is_integer(pid)) {
            json_int_t p = json_integer_value(pid);
            if (p < 0 || p >= PID_STRIDE) {
                snprintf(err, errlen,
                         "%s: event %zu has pid %" JSON_INTEGER_FORMAT
                         ", outside 0..%d: its rank's pids could not be kept apart",
                         label, i, p, PID_STRIDE - 1);
                return -1;
            }
            json_object_set_new(e, "pid", json_integer((json_int_t)k * PID_STRIDE + p));
        }
        json_t *ph = json_object_get(e, "ph"), *name = json_object_get(e, "name");
        json_t *args = json_object_get(e, "args");
        if (json_is_string(ph) && strcmp(json_string_value(ph), "M") == 0 && json_is_string(name) &&
            strcmp(json_string_value(name), "process_name") == 0 && json_is_object(args) &&
            json_is_string(json_object_get(args, "name"))) {
            char buf[256];
            snprintf(buf, sizeof(buf), "rank %d: %s", k,
                     json_string_value(json_object_get(args, "name")));
            json_object_set_new(args, "name", json_string(buf));
        }
        json_t *id = json_object_get(e, "id");
        if (json_is_integer(id)) {
            json_int_t v = json_integer_value(id);
            if (v < 0 || v > ((json_int_t)LLONG_MAX - k) / n) {
                snprintf(err, errlen,
                         "%s: event %zu has flow id %" JSON_INTEGER_FORMAT
                         ", too large to keep apart from the other inputs' ids",
                         label, i, v);
                return -1;
            }
            json_object_set_new(e, "id", json_integer(v * n + k));
        }
        json_t *ts = json_object_get(e, "ts");
        if (shift_us != 0 && json_is_number(ts))
            json_object_set_new(e, "ts", json_real(json_number_value(ts) + shift_us));
        if (json_array_append(out, e) != 0) {
            snprintf(err, errlen, "%s: out of memory merging it", label);
            return -1;
        }
    }
    return 0;
}

int convoy__tr_merge(const char *const *paths, int n, FILE *out, char *err, size_t errlen)
{
    json_t **roots = calloc((size_t)n, sizeof(*roots));
    json_int_t *origin = calloc((size_t)n, sizeof(*origin));
    json_t *all = json_array(), *merged = json_object(), *from = json_array();
    int rc = -1, aligned = 1;
    if (roots == NULL || origin == NULL || all == NULL || merged == NULL || from == NULL) {
        snprintf(err, errlen, "out of memory merging traces");
        goto done;
    }
    for (int k = 0; k < n; k++) {
        /* The reader first: it checks the whole file and says what is wrong with it. */
        convoy__tr_trace_t *t;
        if (convoy__tr_load(paths[k], &t, err, errlen) != 0)
            goto done;
        convoy__tr_free(t);
        json_error_t je;
        roots[k] = json_load_file(paths[k], JSON_REJECT_DUPLICATES, &je);
        if (roots[k] == NULL || !json_is_array(events_of(roots[k]))) {
            snprintf(err, errlen, "%s: cannot read it again: %s", paths[k],
                     roots[k] == NULL ? je.text : "no events");
            goto done;
        }
        aligned &= origin_of(roots[k], &origin[k]) == 0;
    }
    json_int_t first = 0;
    for (int k = 0; k < n && aligned; k++)
        first = k == 0 || origin[k] < first ? origin[k] : first;
    for (int k = 0; k < n; k++) {
        double shift = aligned ? (double)(origin[k] - first) / 1000.0 : 0;
        if (take_events(events_of(roots[k]), k, n, shift, paths[k], all, err, errlen) != 0)
            goto done;
        json_array_append_new(from, json_string(paths[k]));
    }
    json_object_set(merged, "traceEvents", all);
    json_t *other = json_object();
    json_object_set_new(other, "merged_from", from);
    from = NULL;
    json_object_set_new(other, "clocks_aligned", json_boolean(aligned));
    if (aligned)
        json_object_set_new(other, "clock_origin_ns", json_integer(first));
    json_object_set_new(merged, "otherData", other);
    if (!aligned)
        fprintf(stderr, "convoy-trace: merge: not every trace records clock_origin_ns (older "
                        "traces): each keeps its own time origin\n");
    if (json_dumpf(merged, out, JSON_COMPACT) != 0 || fputc('\n', out) == EOF) {
        snprintf(err, errlen, "writing the merged trace failed: %s", strerror(errno));
        rc = 1;
        goto done;
    }
    rc = 0;
done:
    for (int k = 0; k < n && roots != NULL; k++)
        json_decref(roots[k]);
    free(roots);
    free(origin);
    json_decref(all);
    json_decref(merged);
    json_decref(from);
    return rc;
}

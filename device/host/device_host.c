/*
 * The host device component: the CPU workers. CPU chores see the host pointers of their
 * flows; a batchable class with a CPU batch chore gets the whole ring in one call.
 *
 * The component is selected like the others (src/component.c) and always available;
 * its devices are the CPU workers, which src/worker.c starts, so it has no open. Its
 * parameter table also holds module_dir: the folder of the device modules is a setting
 * of the device framework, and host is the component every build has.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/host/host.h"

static const convoy__param_def_t host_params[] = {
    {.name = "module_dir",
     .type = CONVOY__PARAM_STRING,
     .def = "",
     .doc = "folder of the device modules (convoy_cuda.so, convoy_hip.so; doc/modules.md); "
            "'': the build folder's device/.libs for programs run from it, else the install "
            "folder (LIBDIR/convoy); unused when they are built in (--disable-modules)"},
    {0},
};

/* The CPU workers: nthreads of them, or one per core (counted when they start). */
static int host_query(const convoy__params_t *params, char *why, size_t why_len)
{
    int64_t n = params != NULL ? convoy__param_int(params, "nthreads") : 0;
    if (why != NULL && why_len > 0) {
        if (n > 0)
            snprintf(why, why_len, "%lld CPU worker(s) (nthreads)", (long long)n);
        else
            snprintf(why, why_len, "one CPU worker per core");
    }
    return n > 0 ? (int)n : 1;
}

const convoy__device_component_t convoy__device_host = {
    .name = "host",
    .priority = -1, /* last, after sim */
    .kind = CONVOY_DEVICE_CPU,
    .doc = "the CPU workers; always in use",
    .params = host_params,
    .query = host_query,
    .open = NULL,
    .close = NULL,
    .host_mem = NULL,
};

static void trace_cpu_task(convoy_context_t *ctx, int worker, const convoy__task_t *t, uint64_t t0,
                           uint64_t t1, int count)
{
    /* Internal tasks (an acquire's host side) stay out, as on the devices: their ids are
     * not the program's, and the trace's readers take ids as signed 64-bit numbers. */
    if (convoy__task_internal(t))
        return;
    convoy__trace_emit(ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_CPU_TASK,
                                                            .pid = 0,
                                                            .tid = (int16_t)worker,
                                                            .count = count,
                                                            .ts_ns = t0,
                                                            .dur_ns = t1 - t0,
                                                            .task_id = t->id,
                                                            .ring_id = t->ring_id,
                                                            .name = t->cls->name});
}

/*
 * The failure contract on the CPUs (cpu_write_backup): the host bytes a task may write
 * are saved before its chore and put back if it fails, so a failed task never leaves a
 * half-written newest version. One buffer per worker thread, grown as needed.
 */
typedef struct backup {
    unsigned char *buf;
    size_t cap;
} backup_t;

static _Thread_local backup_t t_backup;

void convoy__host_worker_exit(void)
{
    free(t_backup.buf);
    t_backup = (backup_t){0};
}

/* The distinct data t writes (a datum in two written flows counts once). */
static int written(const convoy__task_t *t, convoy_data_t **out)
{
    const convoy_class_t *cls = t->cls;
    int n = 0;
    for (int i = 0; i < cls->nflows; i++) {
        if (!(cls->modes[i] & CONVOY_WRITE))
            continue;
        int dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = out[k] == t->data[i];
        if (!dup)
            out[n++] = t->data[i];
    }
    return n;
}

/* Save what the tasks write; 0 when out of memory (nothing is saved then). */
static int save(convoy__task_t **ring, int n)
{
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        convoy_data_t *d[CONVOY_MAX_FLOWS];
        int k = written(ring[i], d);
        for (int j = 0; j < k; j++)
            need += d[j]->bytes;
    }
    if (need > t_backup.cap) {
        unsigned char *b = realloc(t_backup.buf, need);
        if (b == NULL)
            return 0;
        t_backup.buf = b;
        t_backup.cap = need;
    }
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        convoy_data_t *d[CONVOY_MAX_FLOWS];
        int k = written(ring[i], d);
        for (int j = 0; j < k; j++) {
            memcpy(t_backup.buf + o, d[j]->host, d[j]->bytes);
            o += d[j]->bytes;
        }
    }
    return 1;
}

/* Put back what the failed tasks of the ring wrote (all of them when all_failed). */
static void restore(convoy__task_t **ring, int n, int all_failed)
{
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        convoy_data_t *d[CONVOY_MAX_FLOWS];
        int k = written(ring[i], d);
        int back = all_failed || ring[i]->fail_code != 0;
        for (int j = 0; j < k; j++) {
            if (back)
                memcpy(d[j]->host, t_backup.buf + o, d[j]->bytes);
            o += d[j]->bytes;
        }
    }
}

/* Does any task of the ring write a datum? */
static int writes_any(convoy__task_t **ring, int n)
{
    for (int i = 0; i < n; i++)
        for (int f = 0; f < ring[i]->cls->nflows; f++)
            if (ring[i]->cls->modes[f] & CONVOY_WRITE)
                return 1;
    return 0;
}

/* The chore functions read once per call: convoy_class_set_chore may change them while
 * tasks of the class are pending. */
typedef struct chores {
    convoy_chore_fn one;
    convoy_batch_chore_fn batch;
} chores_t;

static chores_t cpu_chores(const convoy_class_t *cls)
{
    return (chores_t){.one = __atomic_load_n(&cls->chore[CONVOY_DEVICE_CPU], __ATOMIC_ACQUIRE),
                      .batch =
                          __atomic_load_n(&cls->batch_chore[CONVOY_DEVICE_CPU], __ATOMIC_ACQUIRE)};
}

/* Run the chore (one task) or the batch chore (the ring) with the writes saved when
 * asked; returns the chore's value (-1 when nothing could be saved: *saved_p 0). */
static int run_saved(convoy_context_t *ctx, convoy__task_t **ring, int n, chores_t fn, int *saved_p)
{
    int keep = ctx->cpu_write_backup && !convoy__task_internal(ring[0]) && writes_any(ring, n);
    *saved_p = 1;
    if (keep && !save(ring, n)) {
        *saved_p = 0;
        return -1;
    }
    const convoy_task_view_t *views[64];
    for (int i = 0; i < n; i++) {
        views[i] = &ring[i]->view;
        convoy__chore_join(ring[i]);
    }
    int rc;
    if (n == 1 && fn.one != NULL) {
        rc = fn.one(views[0], NULL);
    } else {
        for (int i = 0; i < n; i++)
            ring[i]->ran |= CONVOY__RAN_BATCH;
        rc = fn.batch(views, n, NULL);
    }
    convoy__chore_leave();
    int any_failed = rc != 0;
    for (int i = 0; i < n && !any_failed; i++)
        any_failed = ring[i]->fail_code != 0;
    if (any_failed && keep)
        restore(ring, n, rc != 0);
    return rc;
}

/* Complete the ring's tasks after their chore call returned rc. */
/* Complete ring[0..n); last: ring[n - 1] is the last task the worker runs before it looks
 * for more, so a successor it makes ready may run next on this worker. */
static void complete_all(convoy__task_t **ring, int n, int rc, int saved, int last)
{
    char msg[256];
    for (int i = 0; i < n; i++) {
        convoy__task_t *t = ring[i];
        const char *what = t->ran & CONVOY__RAN_BATCH ? "batch chore" : "chore";
        int res = convoy__chore_result(t, rc);
        int ok = saved && res == 0;
        /* The message only for a failure: formatting it took a quarter of a successful
         * CPU task's completion (mixed_latency's workers, perf on the H200 host). */
        if (!saved)
            snprintf(msg, sizeof(msg),
                     "out of host memory to save the bytes it writes (cpu_write_backup); the "
                     "chore did not run");
        else if (rc != 0)
            snprintf(msg, sizeof(msg), "the CPU %s of class '%s' returned %d", what, t->cls->name,
                     rc);
        else if (res != 0)
            snprintf(msg, sizeof(msg),
                     "the CPU %s of class '%s' failed it with code %d "
                     "(convoy_task_fail)",
                     what, t->cls->name, res);
        int open = last && i == n - 1;
        if (open)
            convoy__cpu_slot_open(1);
        convoy__task_complete(t, ok ? CONVOY__OK : CONVOY__FAILED, ok ? NULL : msg);
        if (open)
            convoy__cpu_slot_open(0);
    }
}

void convoy__host_execute(convoy_context_t *ctx, int worker, convoy__task_t **ring, int n)
{
    const convoy_class_t *cls = ring[0]->cls;
    for (int i = 0; i < n; i++)
        convoy__task_set_running(ring[i]);
    int saved;
    chores_t fn = cpu_chores(cls);
    if (n > 1 && fn.batch != NULL) {
        uint64_t t0 = ctx->trace ? convoy__now_ns() : 0;
        int rc = run_saved(ctx, ring, n, fn, &saved);
        if (ctx->trace != NULL)
            trace_cpu_task(ctx, worker, ring[0], t0, convoy__now_ns(), n);
        complete_all(ring, n, rc, saved, 1);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (fn.one == NULL && fn.batch == NULL) {
            /* Removed since the task was placed: fail it rather than call NULL. */
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "class '%s' has no chore for the CPUs any more (convoy_class_set_chore "
                     "removed it while the task was pending)",
                     cls->name);
            convoy__task_complete(ring[i], CONVOY__FAILED, msg);
            continue;
        }
        uint64_t t0 = ctx->trace ? convoy__now_ns() : 0;
        int rc = run_saved(ctx, &ring[i], 1, fn, &saved);
        if (ctx->trace != NULL)
            trace_cpu_task(ctx, worker, ring[i], t0, convoy__now_ns(), 1);
        complete_all(&ring[i], 1, rc, saved, i == n - 1);
    }
}

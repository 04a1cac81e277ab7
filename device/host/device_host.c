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

static void complete_all(convoy__task_t **ring, int n, int rc, const char *what)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "the CPU %s returned %d", what, rc);
    for (int i = 0; i < n; i++)
        convoy__task_complete(ring[i], rc == 0 ? CONVOY__OK : CONVOY__FAILED, msg);
}

void convoy__host_execute(convoy_context_t *ctx, int worker, convoy__task_t **ring, int n)
{
    const convoy_class_t *cls = ring[0]->cls;
    for (int i = 0; i < n; i++)
        __atomic_store_n(&ring[i]->state, CONVOY__TASK_RUNNING, __ATOMIC_RELEASE);
    convoy_batch_chore_fn batch = cls->batch_chore[CONVOY_DEVICE_CPU];
    if (n > 1 && batch != NULL) {
        const convoy_task_view_t *views[64];
        for (int i = 0; i < n; i++)
            views[i] = &ring[i]->view;
        uint64_t t0 = ctx->trace ? convoy__now_ns() : 0;
        int rc = batch(views, n, NULL);
        if (ctx->trace != NULL)
            trace_cpu_task(ctx, worker, ring[0], t0, convoy__now_ns(), n);
        complete_all(ring, n, rc, "batch chore");
        return;
    }
    for (int i = 0; i < n; i++) {
        convoy__task_t *t = ring[i];
        uint64_t t0 = ctx->trace ? convoy__now_ns() : 0;
        int rc;
        if (cls->chore[CONVOY_DEVICE_CPU] != NULL)
            rc = cls->chore[CONVOY_DEVICE_CPU](&t->view, NULL);
        else
            rc = batch((const convoy_task_view_t *const[]){&t->view}, 1, NULL);
        if (ctx->trace != NULL)
            trace_cpu_task(ctx, worker, t, t0, convoy__now_ns(), 1);
        complete_all(&ring[i], 1, rc, "chore");
    }
}

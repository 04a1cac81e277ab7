/*
 * Launching a group of a ring: the class's batch chore once for the group's members, else
 * each member's chore, on the next execute stream, behind the stage-in it needs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"

/* What one launch runs: one member's chore, or the batch chore for several. */
typedef struct launch_rec {
    convoy__ring_t *ring;
    int *members; /* indices into ring->m */
    int count;
    convoy_device_kind_t kind;
    int batch;
} launch_rec_t;

/* One member alone: its chore, else the batch chore over it alone; a class left with
 * neither (convoy_class_set_chore removed them while the task was pending) fails it. */
static int run_member(const convoy_class_t *cls, convoy_device_kind_t kind, convoy__member_t *m,
                      void *native_stream)
{
    convoy__task_t *t = m->task;
    convoy_chore_fn one = __atomic_load_n(&cls->chore[kind], __ATOMIC_ACQUIRE);
    convoy_batch_chore_fn batch = __atomic_load_n(&cls->batch_chore[kind], __ATOMIC_ACQUIRE);
    int rc = -1;
    convoy__chore_join(t);
    if (one != NULL) {
        rc = one(&t->view, native_stream);
    } else if (batch != NULL) {
        t->ran |= CONVOY__RAN_BATCH;
        rc = batch((const convoy_task_view_t *const[]){&t->view}, 1, native_stream);
    } else {
        t->ran |= CONVOY__RAN_NO_CHORE;
    }
    convoy__chore_leave();
    m->rc = convoy__chore_result(t, rc);
    return m->rc;
}

static int launch_run(void *arg, void *native_stream)
{
    launch_rec_t *l = arg;
    convoy__member_t *m = l->ring->m;
    const convoy_class_t *cls = l->ring->cls;
    convoy_batch_chore_fn batch =
        l->batch ? __atomic_load_n(&cls->batch_chore[l->kind], __ATOMIC_ACQUIRE) : NULL;
    if (batch != NULL) {
        const convoy_task_view_t *stackv[64] = {0};
        const convoy_task_view_t **views =
            l->count <= 64 ? stackv : malloc((size_t)l->count * sizeof(*views));
        if (views == NULL) {
            for (int i = 0; i < l->count; i++)
                m[l->members[i]].rc = -1;
            return -1;
        }
        for (int i = 0; i < l->count; i++) {
            convoy__task_t *t = m[l->members[i]].task;
            t->ran |= CONVOY__RAN_BATCH;
            views[i] = &t->view;
            convoy__chore_join(t);
        }
        int rc = batch(views, l->count, native_stream);
        convoy__chore_leave();
        /* 0 with some members failed by convoy_task_fail: the others succeeded. */
        for (int i = 0; i < l->count; i++)
            m[l->members[i]].rc = convoy__chore_result(m[l->members[i]].task, rc);
        if (views != stackv)
            free(views);
        return rc;
    }
    /* Each member alone (also when the batch chore was removed since the launch). */
    int rc = 0;
    for (int i = 0; i < l->count; i++) {
        int r = run_member(cls, l->kind, &m[l->members[i]], native_stream);
        if (rc == 0)
            rc = r;
    }
    return rc;
}

/* No event after the launch: wait for its stream, so that it is known to be over before
 * anything it uses is released. If even that fails, the device is broken: the members
 * fail and what the launch may still touch is kept for good. */
static void prove_over(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g,
                       convoy__stream_t *stream)
{
    if (convoy__sync(p, stream) == CONVOY_SUCCESS)
        return;
    snprintf(r->launch_msg, sizeof(r->launch_msg),
             "no event could be recorded after the launch on %s, nor its stream waited for: %s",
             p->dev->name, convoy_last_error(NULL));
    convoy__log_error("%s", r->launch_msg);
    for (int i = 0; i < g->count; i++) {
        convoy__member_t *m = &r->m[r->order[g->first + i]];
        convoy__member_fail(m, MEMBER_FAIL_LAUNCH, 0);
        for (int f = 0; f < m->ncopies; f++) {
            if (m->fresh[f] != NULL) {
                /* The chore writes the fresh buffer; the copy (the newest version) it
                 * does not touch, and keeps. */
                convoy__member_keep_fresh(p, m, f);
            } else if (m->copy[f] != NULL && convoy__member_same_datum(m, f) < 0) {
                /* Written in place: its bytes are unknown. Only read: it keeps them. (Read
                 * in place: it reads convoy_host_alloc memory, kept until convoy_fini.) */
                convoy__devmem_pin(&p->mem, m->copy[f], !convoy__task_writes_datum(m->task, f));
            }
        }
    }
    /* The chores may not have started: they will read their tasks, which complete (and
     * would be freed) now. */
    for (int i = 0; i < g->nrun; i++)
        convoy__task_ref(r->m[g->run[i]].task);
    g->tasks_held = 1; /* this group's only: another group's launch was proven over */
    r->leak = 1;
}

void convoy__launch_group(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    convoy__device_t *dev = p->dev;
    convoy_context_t *ctx = p->ctx;
    uint64_t t_step = ctx->trace != NULL ? convoy__now_ns() : 0;
    unsigned exec = p->next_exec++ % CONVOY__NEXEC;
    convoy__stream_t *stream = p->exec[exec];
    convoy__stream_wait(p, stream, g->in_ev);
    int *run = malloc((size_t)g->count * sizeof(int));
    int nrun = 0;
    for (int i = 0; i < g->count; i++) {
        convoy__member_t *m = &r->m[r->order[g->first + i]];
        for (int w = 0; w < m->nwait; w++)
            convoy__stream_wait(p, stream, m->wait[w]);
        if (m->fail == MEMBER_OK && run != NULL)
            run[nrun++] = r->order[g->first + i];
        else if (run == NULL)
            convoy__member_fail(m, MEMBER_FAIL_LAUNCH, 0);
    }
    const convoy_class_t *cls = r->cls;
    convoy_device_kind_t kind = dev->kind;
    /* Loaded atomically: convoy_class_set_chore may change them while the ring runs. */
    int batch = __atomic_load_n(&cls->batch_chore[kind], __ATOMIC_ACQUIRE) != NULL &&
                (nrun > 1 || __atomic_load_n(&cls->chore[kind], __ATOMIC_ACQUIRE) == NULL);
    int nlaunch = batch ? (nrun > 0) : nrun;
    g->launches = calloc((size_t)(nlaunch > 0 ? nlaunch : 1), sizeof(launch_rec_t));
    g->run = run;
    g->nrun = nrun;
    /* Traced: an event after the stream waits marks when the launch can start, so that
     * its slice shows running, not waiting for another stream (convoy__launch_started). */
    if (ctx->trace != NULL)
        g->start_ev = convoy__pev_record(p, stream);
    uint64_t t0 = convoy__now_ns();
    for (int l = 0; l < nlaunch && g->launches != NULL; l++) {
        launch_rec_t *rec = &((launch_rec_t *)g->launches)[l];
        *rec = (launch_rec_t){.ring = r,
                              .members = batch ? run : &run[l],
                              .count = batch ? nrun : 1,
                              .kind = kind,
                              .batch = batch};
        if (dev->ops->launch(dev, stream, launch_run, rec) != CONVOY_SUCCESS) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s", convoy_last_error(NULL));
            for (int i = 0; i < rec->count; i++) {
                convoy__member_fail(&r->m[rec->members[i]], MEMBER_FAIL_LAUNCH, 0);
                snprintf(r->launch_msg, sizeof(r->launch_msg), "%s", msg);
            }
        }
        atomic_fetch_add_explicit(&ctx->stats.launches, 1, memory_order_relaxed);
    }
    if (g->launches == NULL)
        for (int i = 0; i < nrun; i++)
            convoy__member_fail(&r->m[run[i]], MEMBER_FAIL_LAUNCH, 0);
    /* With pushouts behind it on its stream, the launch's event goes without what makes a
     * poll of it cheap (a GPU's flag: about 2 us of a ring's start on the H200 host) and
     * is polled through the last pushout's: the members complete with their pushouts
     * over anyway (ring_done.c). */
    int npush = convoy__push_behind_plan(p, r, g);
    g->exec_ev =
        npush > 0 ? convoy__record_event_quiet(p, stream) : convoy__record_event(p, stream);
    if (g->exec_ev == NULL)
        prove_over(p, r, g, stream);
    if (ctx->trace != NULL) {
        convoy__trace_step(p, "launch", t_step, r->id, g->count);
        t_step = convoy__now_ns();
    }
    convoy__push_behind(p, r, g, stream, npush);
    if (g->npush > 0) {
        convoy__pev_imply(g->exec_ev, g->push_evs[g->npush - 1]);
    } else if (g->exec_ev != NULL && g->exec_ev->quiet) {
        /* No pushout's event came of them (no memory, or each proven over by a stream
         * wait): an event as usual, here, stands in for it. */
        convoy__pev_t *later = convoy__pev_record(p, stream);
        convoy__pev_imply(g->exec_ev, later);
        convoy__pev_put(p, later);
    }
    if (ctx->trace != NULL && g->npush > 0)
        convoy__trace_step(p, "push behind", t_step, r->id, g->npush);
    if (g->exec_ev != NULL && ctx->trace != NULL) {
        g->exec_ev->traced = 1;
        g->exec_ev->tr = (convoy__trace_event_t){.kind = CONVOY__EV_LAUNCH,
                                                 .pid = (int16_t)p->queue,
                                                 .tid = (int16_t)(5 + exec),
                                                 .count = nrun,
                                                 .ts_ns = t0,
                                                 .ring_id = r->id,
                                                 .name = cls->name};
    }
    g->state = GROUP_LAUNCHED;
}

void convoy__launch_started(convoy__pipe_t *p, convoy__group_t *g)
{
    if (g->start_ev == NULL || g->exec_ev == NULL)
        return;
    /* The host sees the waits end only when it polls, so the slice starts at the last poll
     * that found them going on or the first that found them over, never earlier than its
     * enqueue. The time is read before the poll: should the waits and the launch both end
     * between this poll and the launch's own (one pass), the slice still starts where the
     * waiting was last seen, not at the enqueue. A poll that finds them over reads it
     * again: the thread may have stalled between the two, while the waits ended. */
    uint64_t now = convoy__now_ns();
    int over = convoy__pev_poll(p, g->start_ev);
    if (over)
        now = convoy__now_ns();
    if (now > g->exec_ev->tr.ts_ns)
        g->exec_ev->tr.ts_ns = now;
    /* Pushouts behind it start after it on its lane (push_behind.c). */
    for (int j = 0; j < g->npush; j++)
        if (g->push_evs[j]->tr.ts_ns <= g->exec_ev->tr.ts_ns)
            g->push_evs[j]->tr.ts_ns = g->exec_ev->tr.ts_ns + 1;
    if (!over)
        return;
    convoy__pev_put(p, g->start_ev);
    g->start_ev = NULL;
}

/*
 * A ring's completion (the files of the pipeline are listed in pipeline_impl.h): each
 * member on its launch's event, the versions it wrote, its copies released and the core
 * told; the failure messages; the trace's lifecycle steps; the progress of a ring.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"
#include "src/coherence.h"

static const char *fail_text(const convoy__ring_t *r, const convoy__member_t *m, char *buf,
                             size_t len)
{
    const convoy_class_t *cls = m->task->cls;
    const char *dev = r->pipe->dev->name;
    const convoy_data_t *d = m->task->data[m->fail_flow];
    switch (m->fail) {
    case MEMBER_FAIL_MEMORY:
        snprintf(buf, len, "no device memory on %s: %s", dev, r->mem_msg);
        break;
    case MEMBER_FAIL_STAGE_IN:
        snprintf(buf, len, "stage-in of flow %d (%zu bytes) to %s failed: %s", m->fail_flow,
                 d->bytes, dev, r->in_msg[0] ? r->in_msg : "no memory");
        break;
    case MEMBER_FAIL_LAUNCH:
        snprintf(buf, len, "launch on %s failed: %s", dev,
                 r->launch_msg[0] ? r->launch_msg : "no memory");
        break;
    case MEMBER_FAIL_CHORE:
        if (m->task->ran & CONVOY__RAN_NO_CHORE)
            snprintf(buf, len,
                     "class '%s' has no chore for %s any more (convoy_class_set_chore removed it "
                     "while the task was pending)",
                     cls->name, dev);
        else if (m->task->fail_code != 0 && m->rc == m->task->fail_code)
            snprintf(buf, len,
                     "the %schore of class '%s' failed it with code %d on %s "
                     "(convoy_task_fail)",
                     m->task->ran & CONVOY__RAN_BATCH ? "batch " : "", cls->name, m->rc, dev);
        else
            snprintf(buf, len, "the %schore of class '%s' returned %d on %s",
                     m->task->ran & CONVOY__RAN_BATCH ? "batch " : "", cls->name, m->rc, dev);
        break;
    case MEMBER_FAIL_DEVICE:
        /* With what the device said at its last event that failed: on a GPU, the fault
         * (sticky: every later event's); elsewhere possibly another ring's, hence "last". */
        snprintf(buf, len, "%s reported an error for the copies or the launch of its ring%s%s%s",
                 dev, r->pipe->ev_fail_msg[0] ? " (its last error: " : "", r->pipe->ev_fail_msg,
                 r->pipe->ev_fail_msg[0] ? ")" : "");
        break;
    case MEMBER_FAIL_HOST_WRITE:
        snprintf(buf, len,
                 "the host memory of datum %llu (flow %d, %zu bytes at %p) changed without "
                 "convoy_data_acquire(RW) while %s held a copy of it (found by "
                 "check_host_writes); declare host writes with convoy_data_acquire",
                 (unsigned long long)d->id, m->fail_flow, d->bytes, d->host, dev);
        break;
    default: buf[0] = '\0'; break;
    }
    return buf;
}

/* Did the device report an error for anything m needed? An event not polled (a quiet
 * in_ev proven through the launch is, only when that failed) reads as no error here;
 * on a device whose errors are sticky the launch's own event then carries it. */
static int device_error(const convoy__ring_t *r, const convoy__member_t *m)
{
    if (r->groups == NULL)
        return 0;
    const convoy__group_t *g = &r->groups[m->group];
    int err = (g->exec_ev && g->exec_ev->failed) || (g->in_ev && g->in_ev->failed) ||
              (g->in_small_ev && g->in_small_ev->failed);
    for (int w = 0; w < m->nwait; w++)
        err |= m->wait[w]->failed;
    return err;
}

/* Does the final version flow f of m wrote go home now, with no wait pending? Only an
 * output (written, not read: a datum updated in place is likely to be updated again,
 * and chains pushed 50-75% more bytes home written behind) of a task no other depends on
 * yet (a leaf of the graph: chains --ping-pong, whose outputs the next step reads,
 * pushed 1.5-3x its final bytes and ran 35% slower), of 4 KiB or more (a smaller one
 * costs the progress thread more than the link; the floor halves the submissions of 1-2
 * KiB outputs, whose throughput showed no difference either way), while the pushouts
 * home in flight and those gathered this pass stay within write_behind. The link home
 * is otherwise idle while the program inserts, and the wait's flush then finds little
 * left (doc/design.md, "Write-behind"). *leaf caches the successors' answer for m
 * (-1: not asked yet). */
static int write_behind(const convoy__pipe_t *p, const convoy__member_t *m, int f, int *leaf)
{
    size_t bytes = m->task->data[f]->bytes;
    if (p->behind_off == p->behind_epoch || bytes < 4096 || convoy__task_reads_datum(m->task, f) ||
        p->out_bytes + p->eager_bytes + bytes > p->write_behind)
        return 0;
    if (*leaf < 0)
        *leaf = !convoy__task_has_successors(m->task);
    return *leaf;
}

/* The event of the stage-in submission that filled m's fresh buffer of flow f on the
 * device, or NULL (no such copy, or it has no event). */
static convoy__pev_t *fill_event(const convoy__ring_t *r, const convoy__member_t *m, int f)
{
    return (m->filled >> f) & 1 ? r->in_subs[m->fill_sub[f]] : NULL;
}

/* Complete a member whose events have all been seen; returns 0 when it must wait longer
 * (a copy it holds is still arriving for another member, or a pushout home still reads
 * a copy it wrote in place). A fresh buffer it wrote replaces a copy whose pushout is in
 * flight at once: the old memory stays until that lands (convoy__devmem_replace), so a
 * version written behind does not hold up the next one (chains --ping-pong). */
static int finish_member(convoy__pipe_t *p, convoy__ring_t *r, convoy__member_t *m)
{
    convoy__task_t *t = m->task;
    /* A copy whose stage-in failed when it ran holds garbage, whatever the group's last
     * stage-in event says (a device may report an error at the next event only), and so
     * does a fresh buffer whose fill failed (before, nothing asked: the task succeeded
     * on an unfilled buffer, tests/check_pipeline_faults test_fail_async_fresh_fill). */
    int bad_arrival = 0;
    for (int f = 0; f < m->ncopies; f++) {
        const convoy__devcopy_t *c = m->copy[f];
        if (c == NULL) /* read in place: nothing of it here */
            continue;
        convoy__pev_t *fill = fill_event(r, m, f);
        if (c->arrival != NULL && !convoy__pev_poll(p, c->arrival))
            return 0;
        if (c->out_ev != NULL && convoy__task_writes_datum(t, f) && m->fresh[f] == NULL)
            return 0;
        if (!convoy__pev_poll(p, fill))
            return 0;
        bad_arrival |= c->arrival != NULL && c->arrival->failed;
        bad_arrival |= fill != NULL && fill->failed;
    }
    if (m->fail == MEMBER_OK && m->rc != 0)
        convoy__member_fail(m, MEMBER_FAIL_CHORE, 0);
    if (bad_arrival || device_error(r, m))
        convoy__member_fail(m, MEMBER_FAIL_DEVICE, 0);
    int ok = m->fail == MEMBER_OK;
    for (int f = 0; f < m->ncopies; f++) {
        convoy__devcopy_t *c = m->copy[f];
        convoy_data_t *d = t->data[f];
        if (c == NULL) /* read in place: this device holds nothing of it (no hint) */
            continue;
        if (convoy__member_same_datum(m, f) < 0 && convoy__task_writes_datum(t, f)) {
            /* A fresh buffer a transfer may still write stays kept out of use (its task
             * failed); the copy, untouched, keeps its version. */
            int kept = (m->fresh_kept >> f) & 1;
            if (m->fresh[f] != NULL && !kept && ok) {
                convoy__devmem_replace(&p->mem, c, m->fresh[f]);
            } else if (m->fresh[f] != NULL && !kept) {
                convoy__devmem_free_buffer(&p->mem, m->fresh[f], d->bytes);
            } else if (m->fresh[f] == NULL && !ok) {
                c->version = CONVOY__NO_VERSION; /* half written: the newest is elsewhere */
            }
            /* The completion below commits version + 1, held here only. A version
             * written behind and overwritten here before anything needed it home was
             * pushed for nothing (write_behind stops when that is common). */
            if (ok) {
                if (c->behind_epoch == p->behind_epoch && /* never 0 */
                    atomic_load_explicit(&d->behind_unread, memory_order_relaxed))
                    p->behind_wasted++;
                c->behind_epoch = 0;
                c->version = convoy__coh_version(d) + 1;
                c->writer_id = t->id + 1;
                if ((m->pushed >> f) & 1)
                    t->home_flows |= (uint16_t)(1u << f); /* landed: clean once committed */
                else
                    convoy__devmem_note_written(&p->mem, c);
            }
        }
        m->fresh[f] = NULL;
        if (ok)
            convoy__coh_set_hint(d, p->dev->index);
        if (c->arrival != NULL) {
            if (c->arrival->failed)
                c->version = CONVOY__NO_VERSION; /* it never arrived: stage it in again */
            convoy__pev_put(p, c->arrival);
            c->arrival = NULL;
        }
    }
    /* Release after the versions are set: versions must be written before the copy may
     * be evicted. A final version (no later writer) written while a convoy_wait is
     * pending, or within write_behind's window, keeps its user until it is pushed home
     * with the others of this pass. */
    int eager = ok && atomic_load_explicit(&p->ctx->waiting, memory_order_relaxed) > 0;
    int leaf = -1;
    for (int f = 0; f < m->ncopies; f++) {
        convoy_data_t *d = t->data[f];
        if (m->copy[f] == NULL)
            continue;
        if ((eager || (ok && write_behind(p, m, f, &leaf))) && !((t->home_flows >> f) & 1) &&
            convoy__member_same_datum(m, f) < 0 && convoy__task_writes_datum(t, f) &&
            !(atomic_load_explicit(&d->flags, memory_order_relaxed) &
              (CONVOY_DATA_RESIDENT | CONVOY_DATA_SCRATCH)) &&
            atomic_load_explicit(&d->last_writer_id, memory_order_acquire) == t->id + 1 &&
            convoy__eager_add(p, m->copy[f], eager))
            continue;
        convoy__devmem_release(&p->mem, m->copy[f]);
    }
    m->ncopies = 0;
    for (int w = 0; w < m->nwait; w++)
        convoy__pev_put(p, m->wait[w]);
    m->nwait = 0;
    m->completed = 1;
    r->open_members--;
    p->done_load++;
    char msg[768];
    CONVOY__PROF_SUB(p, CONVOY__SUB_COMPLETE,
                     convoy__task_complete_in(t, ok ? CONVOY__OK : CONVOY__FAILED,
                                              ok ? NULL : fail_text(r, m, msg, sizeof(msg)),
                                              &p->done));
    return 1;
}

/*
 * How many members ahead the completion loop asks for the lines each member's completion
 * touches: its data handles' first lines and its copy records, last touched a ring's start
 * ago and since pushed out of the caches by the members in between. On the H200 host it
 * took the completion of tiny_tasks' members from 7.5 to 6.7 ms a run of 16384 (1 KiB
 * flows: 7.3 to 6.6; doc/results.md, 2026-12-04 late); the reserve loop's distance (4)
 * at 8 or 16 changed nothing there.
 */
#define FINISH_AHEAD 4

static void prefetch_member(const convoy__pipe_t *p, const convoy__member_t *m)
{
    if (m->completed) /* its task may be freed */
        return;
    for (int f = 0; f < m->ncopies; f++) {
        convoy__data_prefetch(m->task->data[f], p->dev->index);
        if (m->copy[f] != NULL)
            convoy__devcopy_prefetch(m->copy[f]);
    }
}

#define TRACE_IDS 64 /* task ids a group's traced step gathers at a time */

/* Lifecycle steps of a group's members, for the trace, as the host sees them: the steps
 * seen done since the last look, each for the group's tasks not yet completed (a
 * completed one's record may be freed), their ids gathered once and recorded TRACE_IDS
 * at a time. */
static void trace_steps(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    static const uint8_t steps[2] = {CONVOY__STEP_STAGED_IN, CONVOY__STEP_EXECUTED};
    convoy__pev_t *evs[2] = {g->in_ev, g->exec_ev};
    int from = g->traced_steps, to = from;
    while (to < 2 && g->state != GROUP_WAIT_IN && convoy__pev_poll(p, evs[to]))
        to++;
    if (to == from)
        return;
    convoy__trace_event_t step = {
        .kind = CONVOY__EV_TASK, .ts_ns = convoy__now_ns(), .ring_id = r->id, .name = r->cls->name};
    uint64_t ids[TRACE_IDS];
    for (int i = 0, nids = 0; i < g->count; nids = 0) {
        for (; i < g->count && nids < TRACE_IDS; i++) {
            const convoy__member_t *m = &r->m[r->order[g->first + i]];
            if (!m->completed)
                ids[nids++] = m->task->id;
        }
        for (int k = from; k < to && nids > 0; k++) {
            step.stage = steps[k];
            convoy__trace_emit_tasks(p->ctx->trace, &step, ids, nids);
        }
    }
    g->traced_steps = to;
}

/* A ring that could not be grouped: its members fail once their copies have landed. */
static int progress_ungrouped(convoy__pipe_t *p, convoy__ring_t *r)
{
    int moved = 0;
    for (int i = 0; i < r->n; i++) {
        convoy__member_t *m = &r->m[i];
        int ready = !m->completed;
        for (int k = 0; k < r->nin && ready; k++)
            ready = convoy__pev_poll(p, r->in_subs[k]);
        for (int w = 0; w < m->nwait && ready; w++)
            ready = convoy__pev_poll(p, m->wait[w]);
        if (ready && finish_member(p, r, m))
            moved = 1;
    }
    return moved;
}

int convoy__ring_progress(convoy__pipe_t *p, convoy__ring_t *r, int *finished_p)
{
    int moved = 0;
    convoy__behind_epoch(p); /* once per ring: its members' completions read it */
    if (r->kind != RING_TASKS)
        moved = convoy__transfer_progress(p, r);
    else if (r->groups == NULL)
        moved = progress_ungrouped(p, r);
    for (int k = 0; k < r->ngroups && r->kind == RING_TASKS; k++) {
        convoy__group_t *g = &r->groups[k];
        if (p->ctx->trace != NULL)
            convoy__launch_started(p, g);
        switch (g->state) {
        case GROUP_WAIT_IN:
            if (convoy__pev_poll(p, g->in_ev) && convoy__pev_poll(p, g->in_small_ev)) {
                CONVOY__PROF_SUB(p, CONVOY__SUB_LAUNCH, convoy__launch_group(p, r, g));
                moved = 1;
            }
            break;
        case GROUP_LAUNCHED: {
            /* The chores' results are known once the launch's event completes. Traced
             * after that poll (an event seen over stays over), so that a launch seen over
             * now shows its members executed before they complete: a completed member is
             * not traced again. */
            int over = convoy__pev_poll(p, g->exec_ev), push_failed = 0;
            /* Its stream waited for each member's waits: with the launch over without
             * error (its event, or a sync of its stream: no event, tasks not held), a
             * quiet one among them (an earlier ring's stage-in, proven through that
             * ring's launch, which may run long) is over too. */
            int waited = over && (g->exec_ev != NULL ? !g->exec_ev->failed : !g->tasks_held);
            if (p->ctx->trace != NULL && g->traced_steps < 2)
                trace_steps(p, r, g);
            /* Its members complete with their pushouts behind it over (push_behind.c). */
            if (over && g->npush > 0)
                over = convoy__push_behind_over(p, g, &push_failed);
            if (!over)
                break;
            int open = 0, finished = 0;
            uint64_t t0 = p->ctx->trace != NULL ? convoy__now_ns() : 0;
            p->done.stamp_ns = t0; /* their completions, traced: seen now */
            p->done.stamp_uses = 0;
            convoy__queue_hold(p->ctx, 1); /* their CPU successors, pushed together */
            for (int i = 0; i < g->count; i++) {
                convoy__member_t *m = &r->m[r->order[g->first + i]];
                if (i + FINISH_AHEAD < g->count)
                    prefetch_member(p, &r->m[r->order[g->first + i + FINISH_AHEAD]]);
                if (m->completed)
                    continue;
                if (push_failed)
                    m->pushed = 0; /* dirty here still: they go home the usual way */
                int ready = 1;
                for (int w = 0; w < m->nwait && ready; w++) {
                    if (waited)
                        convoy__pev_proven(p, m->wait[w]);
                    ready = convoy__pev_poll(p, m->wait[w]);
                }
                int done = 0;
                if (ready)
                    CONVOY__PROF_SUB(p, CONVOY__SUB_FINISH, done = finish_member(p, r, m));
                if (done)
                    finished++;
                else
                    open = 1;
            }
            convoy__queue_hold(p->ctx, 0);
            p->done.stamp_ns = 0;
            moved |= finished > 0;
            if (finished > 0 && p->ctx->trace != NULL)
                convoy__trace_step(p, "complete", t0, r->id, finished);
            if (!open)
                g->state = GROUP_DONE;
            break;
        }
        default: break;
        }
    }
    if (r->open_members == 0) {
        convoy__ring_free(p, r);
        *finished_p = 1;
        return 1;
    }
    return moved;
}

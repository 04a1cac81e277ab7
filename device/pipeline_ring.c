/*
 * One ring through the pipeline: reserve device memory, stage in (planned by the
 * scheduler, issued as bounded submissions), execute (the batch chore once per group of
 * members whose inputs have arrived, else each member's chore), push the written flows
 * out, and complete each member on the events of its own submissions.
 *
 * Members are grouped by the stage-in they wait for: every member whose copies are all in
 * small submissions forms group 0, launched at once behind the last of them on the
 * device; members that need a large (split) copy form a group per large submission and
 * are launched from the host once it has landed, so no stream ever waits on a large copy
 * in front of small work.
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

/* Per-stage scratch for planning and issuing copies. */
typedef struct stage {
    convoy__copy_t *copies;
    int n;
    convoy__plan_t plan;
    int *sub_of;  /* by tag: the submission that carries the copy */
    char *failed; /* by tag: the copy could not be enqueued */
    convoy__pev_t **subs;
    char msg[256]; /* the first failure */
} stage_t;

static void stage_free(stage_t *s)
{
    free(s->copies);
    free(s->plan.subs);
    free(s->sub_of);
    free(s->failed);
    free(s->subs);
}

static int stage_alloc(stage_t *s, int cap)
{
    memset(s, 0, sizeof(*s));
    size_t c = (size_t)(cap > 0 ? cap : 1);
    s->copies = malloc(c * sizeof(*s->copies));
    s->plan.subs = malloc(c * sizeof(*s->plan.subs));
    s->sub_of = malloc(c * sizeof(int));
    s->failed = calloc(c, 1);
    s->subs = calloc(c, sizeof(*s->subs));
    if (!s->copies || !s->plan.subs || !s->sub_of || !s->failed || !s->subs) {
        stage_free(s);
        return -1;
    }
    return 0;
}

static int stream_tid(convoy__pipe_t *p, convoy__stream_t *s)
{
    convoy__stream_t *all[] = {p->in, p->in_large, p->out, p->out_large};
    for (int i = 0; i < 4; i++)
        if (all[i] == s)
            return i + 1;
    return 0;
}

/* Record an event on stream, retrying a few times: a later record on the same stream
 * covers the same work, so a passing failure costs only a short wait. NULL when the
 * device keeps refusing. */
static convoy__pev_t *record_event(convoy__pipe_t *p, convoy__stream_t *stream)
{
    convoy__pev_t *ev = convoy__pev_record(p, stream);
    for (int i = 0; ev == NULL && i < 20; i++) {
        convoy__sleep_until_ns(convoy__now_ns() + 50000);
        ev = convoy__pev_record(p, stream);
    }
    return ev;
}

/* Plan and issue one stage's copies. A failed submission is retried one copy at a time
 * from the first copy it did not enqueue (the memcpy_multi contract); copies that fail
 * alone are marked failed. Every submission gets an event, so nothing enqueued is left
 * without one. */
static void issue_stage(convoy__pipe_t *p, convoy__ring_t *r, stage_t *s, int stage_kind,
                        convoy__stream_t *small, convoy__stream_t *large)
{
    convoy__device_t *dev = p->dev;
    convoy_context_t *ctx = p->ctx;
    convoy__stats_atomic_t *st = &ctx->stats;
    ctx->sched->plan(ctx->sched_state, dev, s->copies, s->n, &s->plan);
    for (int k = 0; k < s->plan.nsubs; k++) {
        const convoy__submission_t *sub = &s->plan.subs[k];
        const convoy__copy_t *cp = s->copies + sub->first;
        convoy__stream_t *stream = sub->split ? large : small;
        int submitted = 0, method = CONVOY__METHOD_LOOP;
        convoy_status_t rc = sub->count == 1
                                 ? dev->ops->memcpy(dev, stream, cp)
                                 : dev->ops->memcpy_multi(dev, stream, cp, sub->count, p->method,
                                                          &submitted, &method);
        if (rc != CONVOY_SUCCESS) {
            if (s->msg[0] == '\0')
                snprintf(s->msg, sizeof(s->msg), "%s", convoy_last_error(NULL));
            if (sub->count == 1) {
                s->failed[cp->tag] = 1;
            } else {
                convoy__log_info("%s: submission of %d copies failed after %d; retrying one "
                                 "copy at a time",
                                 dev->name, sub->count, submitted);
                for (int j = submitted; j < sub->count; j++) {
                    atomic_fetch_add_explicit(&st->retried_copies, 1, memory_order_relaxed);
                    if (dev->ops->memcpy(dev, stream, &cp[j]) != CONVOY_SUCCESS)
                        s->failed[cp[j].tag] = 1;
                }
            }
        }
        convoy__pev_t *ev = record_event(p, stream);
        if (ev == NULL) {
            /* Nothing tells when these copies land: they count as failed, and the device
             * memory they touch is kept out of use for good (failed = 2: the caller pins
             * it), since they may still be running. */
            convoy__log_error("%s: recording an event failed (%s); the copies of this "
                              "submission count as failed",
                              dev->name, convoy_last_error(NULL));
            for (int j = 0; j < sub->count; j++)
                s->failed[cp[j].tag] = 2;
        }
        s->subs[k] = ev;
        for (int j = 0; j < sub->count; j++)
            s->sub_of[cp[j].tag] = k;
        int in = stage_kind == CONVOY__STAGE_IN;
        atomic_fetch_add_explicit(in ? &st->h2d_submissions : &st->d2h_submissions, 1,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(in ? &st->h2d_copies : &st->d2h_copies, (uint64_t)sub->count,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(in ? &st->h2d_bytes : &st->d2h_bytes, sub->bytes,
                                  memory_order_relaxed);
        if (sub->split)
            atomic_fetch_add_explicit(&st->split_copies, 1, memory_order_relaxed);
        if (ev != NULL && ctx->trace != NULL) {
            ev->traced = 1;
            ev->tr = (convoy__trace_event_t){
                .kind = CONVOY__EV_SUBMISSION,
                .stage = (uint8_t)stage_kind,
                .method = (int8_t)(sub->count == 1 ? CONVOY__METHOD_LOOP : method),
                .split = (uint8_t)sub->split,
                .pid = (int16_t)p->queue,
                .tid = (int16_t)stream_tid(p, stream),
                .count = sub->count,
                .ts_ns = ev->enqueue_ns,
                .bytes = sub->bytes,
                .ring_id = r->id};
        }
    }
}

static void member_fail(convoy__member_t *m, int why, int flow)
{
    if (m->fail == MEMBER_OK) {
        m->fail = why;
        m->fail_flow = flow;
    }
}

/* Reserve device memory for every flow of m; on failure release what it took. */
static convoy_status_t reserve_member(convoy__pipe_t *p, convoy__member_t *m)
{
    convoy__task_t *t = m->task;
    void **ptrs = convoy__task_ptrs(t);
    for (int f = 0; f < t->cls->nflows; f++) {
        convoy_status_t st = convoy__devmem_acquire(&p->mem, t->data[f], &m->copy[f]);
        if (st != CONVOY_SUCCESS) {
            for (int g = 0; g < f; g++)
                convoy__devmem_release(&p->mem, m->copy[g]);
            m->ncopies = 0;
            return st;
        }
        m->ncopies = f + 1;
        ptrs[f] = m->copy[f]->ptr;
    }
    return CONVOY_SUCCESS;
}

/* Does m already wait for e? */
static int waits_for(const convoy__member_t *m, const convoy__pev_t *e)
{
    for (int i = 0; i < m->nwait; i++)
        if (m->wait[i] == e)
            return 1;
    return 0;
}

/* Build and issue the ring's stage-in; sets each member's in_need and waits. */
static void stage_in(convoy__pipe_t *p, convoy__ring_t *r)
{
    int nflows = r->cls->nflows;
    stage_t s;
    convoy__devcopy_t **slot = malloc((size_t)(r->n * nflows) * sizeof(*slot));
    if (slot == NULL || stage_alloc(&s, r->n * nflows) != 0) {
        free(slot);
        for (int i = 0; i < r->n; i++)
            member_fail(&r->m[i], MEMBER_FAIL_STAGE_IN, 0);
        return;
    }
    for (int i = 0; i < r->n; i++) {
        convoy__member_t *m = &r->m[i];
        if (m->fail)
            continue;
        for (int f = 0; f < nflows; f++) {
            if (!(m->task->cls->modes[f] & CONVOY_READ))
                continue;
            convoy__devcopy_t *c = m->copy[f];
            convoy_data_t *d = m->task->data[f];
            uint64_t version = atomic_load_explicit(&d->version, memory_order_acquire);
            if (c->stage_ring == r->id)
                continue; /* read by an earlier member of this ring: copied once */
            if (c->version == version) {
                /* Valid here; maybe still arriving through an earlier ring's stage-in. */
                if (c->arrival != NULL && !convoy__pev_poll(p, c->arrival) &&
                    !waits_for(m, c->arrival)) {
                    c->arrival->refs++;
                    m->wait[m->nwait++] = c->arrival;
                }
                continue;
            }
            c->stage_ring = r->id;
            c->stage_slot = s.n;
            slot[s.n] = c;
            s.copies[s.n] = (convoy__copy_t){.dst = c->ptr,
                                             .src = d->host,
                                             .bytes = d->bytes,
                                             .dir = CONVOY__H2D,
                                             .flags = d->host_pinned ? CONVOY__COPY_HOST_PINNED : 0,
                                             .tag = s.n};
            s.n++;
        }
    }
    if (s.n > 0)
        issue_stage(p, r, &s, CONVOY__STAGE_IN, p->in, p->in_large);
    r->nin = s.plan.nsubs;
    r->in_subs = s.subs;
    r->in_split = malloc((size_t)(r->nin > 0 ? r->nin : 1));
    for (int k = 0; k < r->nin && r->in_split != NULL; k++)
        r->in_split[k] = (char)s.plan.subs[k].split;
    s.subs = NULL;
    for (int k = 0; k < s.n; k++) {
        convoy__devcopy_t *c = slot[k];
        if (s.failed[k]) {
            c->version = CONVOY__NO_VERSION;
            if (s.failed[k] == 2)
                convoy__devmem_pin(&p->mem, c);
            continue;
        }
        c->version = atomic_load_explicit(&c->data->version, memory_order_acquire);
        convoy__pev_t *ev = r->in_subs[s.sub_of[k]];
        if (c->arrival != NULL)
            convoy__pev_put(p, c->arrival);
        c->arrival = ev;
        ev->refs++;
    }
    for (int i = 0; i < r->n; i++) {
        convoy__member_t *m = &r->m[i];
        for (int f = 0; f < nflows && !m->fail; f++) {
            convoy__devcopy_t *c = m->copy[f];
            if (!(m->task->cls->modes[f] & CONVOY_READ) || c->stage_ring != r->id)
                continue;
            int k = c->stage_slot;
            if (s.failed[k]) {
                member_fail(m, MEMBER_FAIL_STAGE_IN, f);
                snprintf(r->in_msg, sizeof(r->in_msg), "%s", s.msg);
            }
            m->in_need = CONVOY__MAX(m->in_need, s.sub_of[k]);
        }
    }
    free(slot);
    stage_free(&s);
}

static int launch_run(void *arg, void *native_stream)
{
    launch_rec_t *l = arg;
    convoy__member_t *m = l->ring->m;
    const convoy_class_t *cls = m[l->members[0]].task->cls;
    if (l->batch) {
        const convoy_task_view_t *stackv[64] = {0};
        const convoy_task_view_t **views =
            l->count <= 64 ? stackv : malloc((size_t)l->count * sizeof(*views));
        if (views == NULL) {
            for (int i = 0; i < l->count; i++)
                m[l->members[i]].rc = -1;
            return -1;
        }
        for (int i = 0; i < l->count; i++)
            views[i] = &m[l->members[i]].task->view;
        int rc = cls->batch_chore[l->kind](views, l->count, native_stream);
        for (int i = 0; i < l->count; i++)
            m[l->members[i]].rc = rc;
        if (views != stackv)
            free(views);
        return rc;
    }
    convoy__task_t *t = m[l->members[0]].task;
    int rc = cls->chore[l->kind] != NULL
                 ? cls->chore[l->kind](&t->view, native_stream)
                 : cls->batch_chore[l->kind]((const convoy_task_view_t *const[]){&t->view}, 1,
                                             native_stream);
    m[l->members[0]].rc = rc;
    return rc;
}

/* Enqueue the pushout of a launched group's written flows (members whose chore
 * succeeded) and set each member's completion events. */
static void pushout(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    int nflows = r->cls->nflows;
    stage_t s;
    int *owner = malloc((size_t)(g->count * nflows) * sizeof(int));
    convoy__devcopy_t **source = malloc((size_t)(g->count * nflows) * sizeof(*source));
    if (owner == NULL || source == NULL || stage_alloc(&s, g->count * nflows) != 0) {
        free(owner);
        free(source);
        for (int i = 0; i < g->count; i++)
            member_fail(&r->m[r->order[g->first + i]], MEMBER_FAIL_PUSHOUT, 0);
        return;
    }
    for (int i = 0; i < g->count; i++) {
        convoy__member_t *m = &r->m[r->order[g->first + i]];
        if (m->fail == MEMBER_OK && m->rc != 0)
            member_fail(m, MEMBER_FAIL_CHORE, 0);
        if (m->fail)
            continue;
        for (int f = 0; f < nflows; f++) {
            if (!(m->task->cls->modes[f] & CONVOY_WRITE))
                continue;
            int dup = 0;
            for (int e = 0; e < f && !dup; e++)
                dup = m->copy[e] == m->copy[f] && (m->task->cls->modes[e] & CONVOY_WRITE);
            if (dup)
                continue;
            convoy_data_t *d = m->task->data[f];
            owner[s.n] = r->order[g->first + i];
            source[s.n] = m->copy[f];
            s.copies[s.n] = (convoy__copy_t){.dst = d->host,
                                             .src = m->copy[f]->ptr,
                                             .bytes = d->bytes,
                                             .dir = CONVOY__D2H,
                                             .flags = d->host_pinned ? CONVOY__COPY_HOST_PINNED : 0,
                                             .tag = s.n};
            s.n++;
        }
    }
    if (s.n > 0) {
        if (g->exec_ev != NULL && !g->exec_ev->done) {
            p->dev->ops->stream_wait_event(p->dev, p->out, g->exec_ev->ev);
            p->dev->ops->stream_wait_event(p->dev, p->out_large, g->exec_ev->ev);
        }
        issue_stage(p, r, &s, CONVOY__STAGE_OUT, p->out, p->out_large);
    }
    /* A member completes on the last submission of each stream that carries its copies
     * (streams run in order). */
    for (int k = 0; k < s.n; k++) {
        convoy__member_t *m = &r->m[owner[k]];
        if (s.failed[k]) {
            member_fail(m, MEMBER_FAIL_PUSHOUT, 0);
            snprintf(r->out_msg, sizeof(r->out_msg), "%s", s.msg);
            if (s.failed[k] == 2)
                convoy__devmem_pin(&p->mem, source[k]);
        }
        convoy__pev_t *ev = s.subs[s.sub_of[k]];
        if (ev == NULL)
            continue;
        int slot = s.plan.subs[s.sub_of[k]].split ? 1 : 0;
        if (m->done[slot] != ev) {
            convoy__pev_put(p, m->done[slot]);
            m->done[slot] = ev;
            ev->refs++;
        }
    }
    for (int k = 0; k < s.plan.nsubs; k++)
        convoy__pev_put(p, s.subs[k]);
    free(owner);
    free(source);
    stage_free(&s);
}

/* Launch a group whose inputs are (or will be, in device order) in place. */
static void launch_group(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    convoy__device_t *dev = p->dev;
    convoy_context_t *ctx = p->ctx;
    convoy__stream_t *stream = p->exec[p->next_exec++ % CONVOY__NEXEC];
    if (g->in_ev != NULL && !convoy__pev_poll(p, g->in_ev))
        dev->ops->stream_wait_event(dev, stream, g->in_ev->ev);
    int *run = malloc((size_t)g->count * sizeof(int));
    int nrun = 0;
    for (int i = 0; i < g->count; i++) {
        convoy__member_t *m = &r->m[r->order[g->first + i]];
        for (int w = 0; w < m->nwait; w++)
            if (!convoy__pev_poll(p, m->wait[w]))
                dev->ops->stream_wait_event(dev, stream, m->wait[w]->ev);
        if (m->fail == MEMBER_OK && run != NULL)
            run[nrun++] = r->order[g->first + i];
        else if (run == NULL)
            member_fail(m, MEMBER_FAIL_LAUNCH, 0);
    }
    const convoy_class_t *cls = r->cls;
    convoy_device_kind_t kind = dev->kind;
    int batch = cls->batch_chore[kind] != NULL && (nrun > 1 || cls->chore[kind] == NULL);
    int nlaunch = batch ? (nrun > 0) : nrun;
    g->launches = calloc((size_t)(nlaunch > 0 ? nlaunch : 1), sizeof(launch_rec_t));
    g->run = run;
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
                member_fail(&r->m[rec->members[i]], MEMBER_FAIL_LAUNCH, 0);
                snprintf(r->launch_msg, sizeof(r->launch_msg), "%s", msg);
            }
        }
        atomic_fetch_add_explicit(&ctx->stats.launches, 1, memory_order_relaxed);
    }
    if (g->launches == NULL)
        for (int i = 0; i < nrun; i++)
            member_fail(&r->m[run[i]], MEMBER_FAIL_LAUNCH, 0);
    g->exec_stream = stream;
    g->exec_ev = record_event(p, stream);
    if (g->exec_ev == NULL) /* retried from ring_progress until this deadline */
        g->record_deadline = convoy__now_ns() + 1000000000ull;
    if (g->exec_ev != NULL && ctx->trace != NULL) {
        g->exec_ev->traced = 1;
        g->exec_ev->tr =
            (convoy__trace_event_t){.kind = CONVOY__EV_LAUNCH,
                                    .pid = (int16_t)p->queue,
                                    .tid = (int16_t)(5 + (p->next_exec - 1) % CONVOY__NEXEC),
                                    .count = nrun,
                                    .ts_ns = t0,
                                    .ring_id = r->id,
                                    .name = cls->name};
    }
    g->state = GROUP_LAUNCHED;
    if (dev->launch_inline && g->exec_ev != NULL) {
        pushout(p, r, g);
        g->state = GROUP_PUSHED;
    }
}

/* The event of stage-in submission k or, when none could be recorded for it, of the last
 * earlier submission on the same stream that has one: streams run in order, so it covers
 * every copy before it (the copies of k itself failed, and so did the members needing
 * them). */
static convoy__pev_t *recorded_at_or_before(const convoy__ring_t *r, int k)
{
    int split = r->in_split != NULL && r->in_split[k];
    for (int j = k; j >= 0; j--)
        if (r->in_subs[j] != NULL && (r->in_split != NULL && r->in_split[j]) == split)
            return r->in_subs[j];
    return NULL;
}

/* Split the ring's members into groups by the stage-in they need (see the top). */
static int make_groups(convoy__ring_t *r)
{
    int n = r->n;
    r->order = malloc((size_t)n * sizeof(int));
    r->groups = calloc((size_t)(n + 1), sizeof(convoy__group_t));
    if (r->order == NULL || r->groups == NULL)
        return -1;
    /* key: -1 for group 0, else the split submission needed. */
    int *key = malloc((size_t)n * sizeof(int));
    if (key == NULL)
        return -1;
    int small_need = -1, last_small = -1;
    for (int k = 0; k < r->nin; k++)
        if (r->in_split == NULL || !r->in_split[k])
            last_small = k;
    for (int i = 0; i < n; i++) {
        int need = r->m[i].in_need;
        int split = need >= 0 && r->in_split != NULL && r->in_split[need];
        if (need >= 0 && r->in_split == NULL)
            split = 0;
        key[i] = split ? need : -1;
        if (!split)
            small_need = CONVOY__MAX(small_need, need);
    }
    /* A member that needs a split copy also waits, in device order, for the small
     * submissions before it; the host launch happens after the split one has landed,
     * and streams complete in order, so its key's event covers everything. */
    int o = 0;
    r->ngroups = 0;
    for (int k = -1; k < r->nin; k++) {
        int first = o;
        for (int i = 0; i < n; i++)
            if (key[i] == k)
                r->order[o++] = i;
        if (o == first)
            continue;
        convoy__group_t *g = &r->groups[r->ngroups++];
        g->first = first;
        g->count = o - first;
        g->split = k >= 0;
        int ev_index = k >= 0 ? k : small_need;
        g->in_ev = ev_index >= 0 ? recorded_at_or_before(r, ev_index) : NULL;
        if (k >= 0) {
            /* The small submissions may carry some of its inputs too, and the large
             * stream runs independently of them: wait for the ring's last small
             * submission (small_need covers only the members without a split copy). */
            g->in_small_ev = last_small >= 0 ? recorded_at_or_before(r, last_small) : NULL;
        }
        for (int i = first; i < o; i++)
            r->m[r->order[i]].group = r->ngroups - 1;
    }
    free(key);
    return 0;
}

void convoy__ring_start(convoy__pipe_t *p, convoy__task_t **tasks, int n)
{
    convoy_context_t *ctx = p->ctx;
    convoy__ring_t *r = calloc(1, sizeof(*r));
    convoy__member_t *m = r != NULL ? calloc((size_t)n, sizeof(*m)) : NULL;
    if (m == NULL) {
        free(r);
        for (int i = 0; i < n; i++)
            convoy__task_complete(tasks[i], CONVOY__FAILED,
                                  "out of host memory for the pipeline's ring state");
        atomic_fetch_sub_explicit(&p->load, n, memory_order_relaxed);
        return;
    }
    r->id = atomic_fetch_add(&ctx->next_ring_id, 1);
    r->pipe = p;
    r->cls = tasks[0]->cls; /* members complete, and may be freed, group by group */
    r->m = m;
    /* Reserve: a member that finds no memory while other work holds some waits for it
     * (deferred, in order); alone, it fails. */
    convoy__task_t **defer_tail = &p->deferred;
    while (*defer_tail != NULL)
        defer_tail = &(*defer_tail)->next;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        convoy__task_t *t = tasks[i];
        __atomic_store_n(&t->state, CONVOY__TASK_RUNNING, __ATOMIC_RELEASE);
        convoy__member_t *mm = &m[kept];
        memset(mm, 0, sizeof(*mm));
        mm->task = t;
        mm->in_need = -1;
        convoy_status_t st = reserve_member(p, mm);
        if (st == CONVOY_ERR_NOMEM && (p->nrings > 0 || kept > 0)) {
            t->next = NULL;
            *defer_tail = t;
            defer_tail = &t->next;
            continue;
        }
        if (st != CONVOY_SUCCESS) {
            mm->fail = MEMBER_FAIL_MEMORY;
            mm->fail_status = st;
            snprintf(r->mem_msg, sizeof(r->mem_msg), "%s", convoy_last_error(NULL));
        }
        t->ring_id = r->id;
        kept++;
    }
    r->n = kept;
    if (kept == 0) {
        free(m);
        free(r);
        return;
    }
    atomic_fetch_add_explicit(&ctx->stats.rings, 1, memory_order_relaxed);
    r->open_members = kept;
    stage_in(p, r);
    if (make_groups(r) != 0) {
        /* Out of host memory: fail everything the ring holds, once its copies land. */
        convoy__log_error("out of host memory grouping ring %lld", (long long)r->id);
        free(r->order);
        free(r->groups);
        r->order = malloc((size_t)kept * sizeof(int));
        r->groups = calloc(1, sizeof(convoy__group_t));
        if (r->order == NULL || r->groups == NULL)
            abort(); /* no memory even for the fallback: nothing sane is left to do */
        for (int i = 0; i < kept; i++) {
            r->order[i] = i;
            member_fail(&m[i], MEMBER_FAIL_STAGE_IN, 0);
        }
        r->ngroups = 1;
        r->groups[0] = (convoy__group_t){.first = 0,
                                         .count = kept,
                                         .split = 1,
                                         .in_ev = r->nin > 0 ? r->in_subs[r->nin - 1] : NULL};
    }
    for (int k = 0; k < r->ngroups; k++)
        if (!r->groups[k].split)
            launch_group(p, r, &r->groups[k]);
    r->next = NULL;
    convoy__ring_t **tail = &p->rings;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = r;
    p->nrings++;
}

static const char *fail_text(const convoy__ring_t *r, const convoy__member_t *m, char *buf,
                             size_t len)
{
    const convoy_class_t *cls = m->task->cls;
    const char *dev = r->pipe->dev->name;
    switch (m->fail) {
    case MEMBER_FAIL_MEMORY:
        snprintf(buf, len, "no device memory on %s: %s", dev, r->mem_msg);
        break;
    case MEMBER_FAIL_STAGE_IN:
        snprintf(buf, len, "stage-in of flow %d (%zu bytes) to %s failed: %s", m->fail_flow,
                 m->task->data[m->fail_flow]->bytes, dev, r->in_msg[0] ? r->in_msg : "no memory");
        break;
    case MEMBER_FAIL_LAUNCH:
        snprintf(buf, len, "launch on %s failed: %s", dev,
                 r->launch_msg[0] ? r->launch_msg : "no memory");
        break;
    case MEMBER_FAIL_CHORE:
        snprintf(buf, len, "the %schore of class '%s' returned %d on %s",
                 cls->batch_chore[r->pipe->dev->kind] ? "batch " : "", cls->name, m->rc, dev);
        break;
    case MEMBER_FAIL_DEVICE:
        snprintf(buf, len, "%s reported an error for the copies or the launch of its ring", dev);
        break;
    case MEMBER_FAIL_PUSHOUT:
        snprintf(buf, len, "pushout from %s failed: %s", dev,
                 r->out_msg[0] ? r->out_msg : "no memory");
        break;
    default: buf[0] = '\0'; break;
    }
    return buf;
}

/* Complete a member whose events have all been seen; returns 0 when it must wait
 * longer (a copy it holds is still arriving for another member). */
static int finish_member(convoy__pipe_t *p, convoy__ring_t *r, convoy__member_t *m)
{
    for (int f = 0; f < m->ncopies; f++)
        if (m->copy[f]->arrival != NULL && !convoy__pev_poll(p, m->copy[f]->arrival))
            return 0;
    convoy__task_t *t = m->task;
    const convoy_class_t *cls = t->cls;
    if (m->fail == MEMBER_OK && m->rc != 0)
        member_fail(m, MEMBER_FAIL_CHORE, 0);
    const convoy__group_t *g = &r->groups[m->group];
    int device_error = (m->done[0] && m->done[0]->failed) || (m->done[1] && m->done[1]->failed) ||
                       (g->exec_ev && g->exec_ev->failed) || (g->in_ev && g->in_ev->failed) ||
                       (g->in_small_ev && g->in_small_ev->failed);
    for (int w = 0; w < m->nwait; w++)
        device_error |= m->wait[w]->failed;
    if (device_error)
        member_fail(m, MEMBER_FAIL_DEVICE, 0);
    int ok = m->fail == MEMBER_OK;
    int home = p->dev->index + 1;
    for (int f = 0; f < m->ncopies; f++) {
        convoy__devcopy_t *c = m->copy[f];
        if (cls->modes[f] & CONVOY_WRITE) {
            /* The writer's completion below makes version + 1 the newest. */
            c->version = ok ? atomic_load(&t->data[f]->version) + 1 : CONVOY__NO_VERSION;
        }
        if (ok)
            atomic_store_explicit(&t->data[f]->home_hint, home, memory_order_relaxed);
        if (c->arrival != NULL) {
            convoy__pev_put(p, c->arrival);
            c->arrival = NULL;
        }
    }
    /* Release after the versions are set: a datum written through two flows shares a
     * copy, and versions must be written before the copy may be evicted. */
    for (int f = 0; f < m->ncopies; f++)
        convoy__devmem_release(&p->mem, m->copy[f]);
    for (int w = 0; w < m->nwait; w++)
        convoy__pev_put(p, m->wait[w]);
    for (int k = 0; k < 2; k++)
        convoy__pev_put(p, m->done[k]);
    m->nwait = 0;
    m->done[0] = m->done[1] = NULL;
    m->completed = 1;
    r->open_members--;
    atomic_fetch_sub_explicit(&p->load, 1, memory_order_relaxed);
    char msg[768];
    convoy__task_complete(t, ok ? CONVOY__OK : CONVOY__FAILED,
                          ok ? NULL : fail_text(r, m, msg, sizeof(msg)));
    return 1;
}

void convoy__ring_free(convoy__pipe_t *p, convoy__ring_t *r)
{
    if (r->leak) {
        /* A launch without an event may still write its members' results here. */
        convoy__log_error("%s: ring %lld is kept in memory: a launch of it was never seen to "
                          "end",
                          p->dev->name, (long long)r->id);
        r->next = p->kept;
        p->kept = r;
        return;
    }
    for (int k = 0; k < r->nin; k++)
        convoy__pev_put(p, r->in_subs[k]);
    for (int k = 0; k < r->ngroups; k++) {
        convoy__pev_put(p, r->groups[k].exec_ev);
        free(r->groups[k].launches);
        free(r->groups[k].run);
    }
    free(r->in_subs);
    free(r->in_split);
    free(r->groups);
    free(r->order);
    free(r->m);
    free(r);
}

/* A launch with no event yet: record one now (it covers the launch). Returns 0 once it
 * has given up: past the deadline the device is taken as broken, the members fail, and
 * the ring's memory and the members' device copies are kept for good, since the launch
 * may still run and touch them. */
static int record_exec_again(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    g->exec_ev = convoy__pev_record(p, g->exec_stream);
    if (g->exec_ev != NULL || convoy__now_ns() < g->record_deadline)
        return 1;
    snprintf(r->launch_msg, sizeof(r->launch_msg),
             "no event could be recorded after the launch on %s: %s", p->dev->name,
             convoy_last_error(NULL));
    convoy__log_error("%s", r->launch_msg);
    for (int i = 0; i < g->count; i++) {
        convoy__member_t *m = &r->m[r->order[g->first + i]];
        member_fail(m, MEMBER_FAIL_LAUNCH, 0);
        for (int f = 0; f < m->ncopies; f++)
            convoy__devmem_pin(&p->mem, m->copy[f]);
    }
    r->leak = 1;
    g->state = GROUP_PUSHED;
    return 0;
}

/* Lifecycle steps of a group's members, for the trace, as the host sees them. */
static void trace_steps(convoy__pipe_t *p, convoy__ring_t *r, convoy__group_t *g)
{
    int steps[2] = {CONVOY__STEP_STAGED_IN, CONVOY__STEP_EXECUTED};
    convoy__pev_t *evs[2] = {g->in_ev, g->exec_ev};
    for (int k = g->traced_steps; k < 2 && g->state != GROUP_WAIT_IN; k++) {
        if (!convoy__pev_poll(p, evs[k]))
            break;
        uint64_t now = convoy__now_ns();
        for (int i = 0; i < g->count; i++) {
            const convoy__member_t *m = &r->m[r->order[g->first + i]];
            if (m->completed)
                continue; /* its task may be freed */
            convoy__task_t *t = m->task;
            convoy__trace_emit(p->ctx->trace, &(convoy__trace_event_t){.kind = CONVOY__EV_TASK,
                                                                       .stage = (uint8_t)steps[k],
                                                                       .ts_ns = now,
                                                                       .task_id = t->id,
                                                                       .ring_id = r->id,
                                                                       .name = t->cls->name});
        }
        g->traced_steps = k + 1;
    }
}

int convoy__ring_progress(convoy__pipe_t *p, convoy__ring_t *r, int *finished_p)
{
    int moved = 0;
    for (int k = 0; k < r->ngroups; k++) {
        convoy__group_t *g = &r->groups[k];
        if (p->ctx->trace != NULL && g->traced_steps < 2)
            trace_steps(p, r, g);
        switch (g->state) {
        case GROUP_WAIT_IN:
            if (convoy__pev_poll(p, g->in_ev) && convoy__pev_poll(p, g->in_small_ev)) {
                launch_group(p, r, g);
                moved = 1;
            }
            break;
        case GROUP_LAUNCHED:
            if (g->exec_ev == NULL && !record_exec_again(p, r, g)) {
                moved = 1; /* given up: the group's members fail */
                break;
            }
            if (g->exec_ev == NULL)
                break;
            /* The chores' results are known once the launch's event completes. */
            if (convoy__pev_poll(p, g->exec_ev)) {
                pushout(p, r, g);
                g->state = GROUP_PUSHED;
                moved = 1;
            }
            break;
        case GROUP_PUSHED: {
            int open = 0;
            for (int i = 0; i < g->count; i++) {
                convoy__member_t *m = &r->m[r->order[g->first + i]];
                if (m->completed)
                    continue;
                int ready = convoy__pev_poll(p, g->exec_ev) && convoy__pev_poll(p, m->done[0]) &&
                            convoy__pev_poll(p, m->done[1]);
                for (int w = 0; w < m->nwait && ready; w++)
                    ready = convoy__pev_poll(p, m->wait[w]);
                if (ready && finish_member(p, r, m))
                    moved = 1;
                else
                    open = 1;
            }
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

/*
 * One ring of the program's tasks through the pipeline: reserve device memory, stage in
 * (planned by the scheduler, issued as bounded submissions), execute (launch.c), and
 * complete each member on the events of what it needs. Written flows stay on the device
 * as the newest version (write-back); they go home only when needed (pushout.c).
 *
 * Members are grouped by the stage-in they wait for: every member whose copies are all in
 * small submissions forms group 0, launched at once behind the last of them on the
 * device; members that need a large (split) copy form a group per large submission and
 * are launched from the host once it has landed, so no stream ever waits on a large copy
 * in front of small work.
 *
 * The failure contract: a member writing a copy that is its datum's only newest version
 * writes a fresh buffer instead (filled from the copy on the device first when the task
 * reads the datum); the buffer replaces the copy's memory only if the task succeeds.
 * Other written copies are written in place and invalidated if it fails: the newest
 * version is then on the host.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"
#include "src/coherence.h"

void convoy__member_fail(convoy__member_t *m, int why, int flow)
{
    if (m->fail == MEMBER_OK) {
        m->fail = why;
        m->fail_flow = flow;
    }
}

static void release_member(convoy__pipe_t *p, convoy__member_t *m)
{
    for (int f = 0; f < m->ncopies; f++) {
        if (m->fresh[f] != NULL && convoy__member_same_datum(m, f) < 0)
            convoy__devmem_free_buffer(&p->mem, m->fresh[f], m->task->data[f]->bytes);
        if (m->copy[f] != NULL)
            convoy__devmem_release(&p->mem, m->copy[f]);
    }
    for (int f = 0; f < m->ncopies; f++)
        m->fresh[f] = NULL;
    m->ncopies = 0;
}

void convoy__member_keep_fresh(convoy__pipe_t *p, convoy__member_t *m, int f)
{
    void *buf = m->fresh[f];
    if (buf == NULL || (m->fresh_kept & (1u << f)))
        return;
    convoy__devmem_keep_buffer(&p->mem, buf, m->task->data[f]->bytes);
    for (int e = 0; e < m->task->cls->nflows; e++)
        if (m->fresh[e] == buf)
            m->fresh_kept |= 1u << e;
}

/* May t's chore read inputs in place here: a class with the flag, each datum named once? */
static int class_in_place(const convoy__pipe_t *p, const convoy__task_t *t)
{
    return p->in_place_max > 0 && (t->cls->flags & CONVOY_CLASS_INPUTS_IN_PLACE) && !t->aliased;
}

/* Does the chore of t (of an in-place class, naming each datum once: class_in_place)
 * read flow f in place, in host memory (CONVOY_CLASS_INPUTS_IN_PLACE)? A READ flow of at
 * most in_place_max bytes, whose newest version is home in convoy_host_alloc memory that
 * chores here reach, and of which this device holds no copy at that version (a valid
 * copy here is read here, off the link). Nothing writes that host memory meanwhile: a
 * later writer of the datum (a task, an acquire to write) waits for this task, and a
 * newer version comes home only from one. */
static int reads_in_place(const convoy__pipe_t *p, const convoy__task_t *t, int f)
{
    const convoy_data_t *d = t->data[f];
    if (t->cls->modes[f] != CONVOY_READ || !d->host_in_place || d->bytes > p->in_place_max)
        return 0;
    uint64_t version;
    int on;
    convoy__coh_get(d, &version, &on);
    const convoy__devcopy_t *c = d->dev[p->dev->index];
    return on == CONVOY__COH_HOST && (c == NULL || c->version != version);
}

/* Reserve device memory for every flow of m but those it reads in place (their copy
 * NULL), and a fresh buffer for each datum it writes whose copy here is the only newest
 * version. On failure release what it took. */
static convoy_status_t reserve_member(convoy__pipe_t *p, convoy__member_t *m)
{
    convoy__task_t *t = m->task;
    int nflows = t->cls->nflows;
    void **ptrs = convoy__task_ptrs(t);
    int in_place = class_in_place(p, t);
    for (int f = 0; f < nflows; f++) {
        if (in_place && reads_in_place(p, t, f)) {
            m->copy[f] = NULL;
            m->ncopies = f + 1;
            continue;
        }
        convoy_status_t st = convoy__devmem_acquire(&p->mem, t->data[f], &m->copy[f]);
        if (st != CONVOY_SUCCESS) {
            release_member(p, m);
            return st;
        }
        m->ncopies = f + 1;
    }
    for (int f = 0; f < nflows; f++) {
        if (convoy__member_same_datum(m, f) >= 0 || !convoy__task_writes_datum(t, f) ||
            !convoy__devmem_dirty(&p->mem, m->copy[f]))
            continue;
        convoy_status_t st = convoy__devmem_alloc_buffer(&p->mem, t->data[f]->bytes, &m->fresh[f]);
        if (st != CONVOY_SUCCESS) {
            release_member(p, m);
            return st;
        }
    }
    for (int f = 0; f < nflows; f++) {
        int e = convoy__member_same_datum(m, f);
        if (e >= 0)
            m->fresh[f] = m->fresh[e];
        ptrs[f] = m->fresh[f] != NULL  ? m->fresh[f]
                  : m->copy[f] != NULL ? m->copy[f]->ptr
                                       : t->data[f]->host;
    }
    return CONVOY_SUCCESS;
}

/*
 * How many members ahead the reserve loop asks for the lines that a member's flows touch:
 * the data handles (their first 64 bytes and this device's copy slot, convoy__data_prefetch),
 * last written on the inserting thread's core, and before those the task's list of them. Each is a
 * miss from another core, and the loop otherwise takes them one after another.
 */
#define RESERVE_AHEAD 4

static void prefetch_data_list(convoy__task_t *const *tasks, int i, int n)
{
    if (i < n)
        convoy__prefetch_w(&tasks[i]->data[0], 1);
}

static void prefetch_data(const convoy__pipe_t *p, convoy__task_t *const *tasks, int i, int n)
{
    if (i >= n)
        return;
    const convoy__task_t *t = tasks[i];
    for (int f = 0; f < t->cls->nflows; f++)
        convoy__data_prefetch(t->data[f], p->dev->index);
}

/* Does m already wait for e? */
static int waits_for(const convoy__member_t *m, const convoy__pev_t *e)
{
    for (int i = 0; i < m->nwait; i++)
        if (m->wait[i] == e)
            return 1;
    return 0;
}

static void add_wait(convoy__pipe_t *p, convoy__member_t *m, convoy__pev_t *e)
{
    if (e == NULL || convoy__pev_poll(p, e) || waits_for(m, e) ||
        m->nwait == (int)(sizeof(m->wait) / sizeof(m->wait[0])))
        return;
    e->refs++;
    m->wait[m->nwait++] = e;
}

/* What a stage-in copy is for: the members needing it wait for its submission. */
typedef struct slot {
    convoy__devcopy_t *copy; /* H2D: the copy it fills; D2D: the copy it reads */
    int member;              /* D2D: the member whose fresh buffer it fills; -1 for H2D */
} slot_t;

/* The copies one member's reads need: H2D for copies not at the newest version, D2D into
 * its fresh buffers. Skips copies valid here (waiting for them if still arriving). */
static void plan_member(convoy__pipe_t *p, convoy__ring_t *r, int i, convoy__stage_t *s,
                        slot_t *slot, uint64_t in_place[2])
{
    convoy__member_t *m = &r->m[i];
    convoy__task_t *t = m->task;
    const convoy_class_t *cls = t->cls;
    for (int f = 0; f < cls->nflows && !m->fail; f++) {
        convoy__devcopy_t *c = m->copy[f];
        convoy_data_t *d = t->data[f];
        if (convoy__member_same_datum(m, f) >= 0 || !convoy__task_reads_datum(t, f))
            continue;
        uint64_t version;
        int on;
        convoy__coh_get(d, &version, &on);
        if (c == NULL) { /* read in place: the home version, as a stage-in would copy it */
            convoy__coh_note_host(d, version);
            convoy__coh_read_home(d);
            in_place[0]++; /* counted for the stats: reads, bytes */
            in_place[1] += d->bytes;
            continue;
        }
        if (m->fresh[f] != NULL) {
            /* The only newest version is c: copy it into the buffer the task writes. */
            slot[s->n] = (slot_t){.copy = c, .member = i};
            s->copies[s->n] = (convoy__copy_t){.dst = m->fresh[f],
                                               .src = c->ptr,
                                               .bytes = d->bytes,
                                               .dir = CONVOY__D2D,
                                               .tag = s->n};
            s->n++;
            continue;
        }
        if (c->stage_ring == r->id)
            continue; /* read by an earlier member of this ring: copied once */
        if (c->version == version) {
            if (on == CONVOY__COH_HOST && convoy__coh_host_changed(d, version)) {
                convoy__member_fail(m, MEMBER_FAIL_HOST_WRITE, f);
                continue;
            }
            add_wait(p, m, c->arrival); /* maybe still arriving through an earlier ring */
            continue;
        }
        if (on != CONVOY__COH_HOST) {
            /* Rule R makes this impossible; fail rather than read stale host bytes. */
            convoy__member_fail(m, MEMBER_FAIL_STAGE_IN, f);
            snprintf(r->in_msg, sizeof(r->in_msg),
                     "datum %llu's newest version is on accelerator %d, not in host memory",
                     (unsigned long long)d->id, on);
            continue;
        }
        c->stage_ring = r->id;
        c->stage_slot = s->n;
        convoy__coh_note_host(d, version);
        convoy__coh_read_home(d);
        slot[s->n] = (slot_t){.copy = c, .member = -1};
        s->copies[s->n] = (convoy__copy_t){.dst = c->ptr,
                                           .src = d->host,
                                           .bytes = d->bytes,
                                           .dir = CONVOY__H2D,
                                           .flags = d->host_pinned ? CONVOY__COPY_HOST_PINNED : 0,
                                           .tag = s->n};
        s->n++;
    }
    /* A copy written in place must not change while a pushout home still reads it. */
    for (int f = 0; f < cls->nflows; f++)
        if (convoy__member_same_datum(m, f) < 0 && convoy__task_writes_datum(t, f) &&
            m->fresh[f] == NULL)
            add_wait(p, m, m->copy[f]->out_ev);
}

/* Build and issue the ring's stage-in; sets each member's in_need and waits. */
static void stage_in(convoy__pipe_t *p, convoy__ring_t *r)
{
    int cap = r->n * r->cls->nflows;
    convoy__stage_t s;
    slot_t *slot = malloc((size_t)cap * sizeof(*slot));
    if (slot == NULL || convoy__stage_get(p, &s, cap) != 0) {
        free(slot);
        for (int i = 0; i < r->n; i++)
            convoy__member_fail(&r->m[i], MEMBER_FAIL_STAGE_IN, 0);
        return;
    }
    uint64_t in_place[2] = {0, 0};
    for (int i = 0; i < r->n; i++)
        if (!r->m[i].fail)
            plan_member(p, r, i, &s, slot, in_place);
    if (in_place[0] > 0) {
        atomic_fetch_add_explicit(&p->ctx->stats.in_place_reads, in_place[0], memory_order_relaxed);
        atomic_fetch_add_explicit(&p->ctx->stats.in_place_bytes, in_place[1], memory_order_relaxed);
    }
    if (s.n > 0)
        CONVOY__PROF_SUB(p, CONVOY__SUB_ISSUE,
                         convoy__stage_issue(p, r->id, &s, CONVOY__STAGE_IN, p->in, p->in_large));
    /* The submissions' events and whether each was split, in one block the ring keeps.
     * Without it the stage's own array is kept, and no in_split fails the ring
     * (make_groups). */
    r->nin = s.plan.nsubs;
    r->in_subs = malloc((size_t)r->nin * (sizeof(*r->in_subs) + 1) + 1);
    if (r->in_subs != NULL) {
        memcpy(r->in_subs, s.subs, (size_t)r->nin * sizeof(*r->in_subs));
        r->in_split = (char *)(r->in_subs + r->nin);
        for (int k = 0; k < r->nin; k++)
            r->in_split[k] = (char)s.plan.subs[k].split;
    } else {
        r->in_subs = s.subs;
        s.subs = NULL;
    }
    for (int k = 0; k < s.n; k++) {
        convoy__devcopy_t *c = slot[k].copy;
        if (slot[k].member >= 0) {
            convoy__member_t *m = &r->m[slot[k].member];
            if (s.failed[k]) {
                convoy__member_fail(m, MEMBER_FAIL_STAGE_IN, 0);
                snprintf(r->in_msg, sizeof(r->in_msg), "%s", s.msg);
            }
            if (s.failed[k] == 2) {
                /* The copy may still run: it reads c (which keeps its version) and writes
                 * the fresh buffer. */
                convoy__devmem_pin(&p->mem, c, 1);
                for (int f = 0; f < r->cls->nflows; f++)
                    if (m->fresh[f] == s.copies[k].dst)
                        convoy__member_keep_fresh(p, m, f);
            } else if (!s.failed[k]) {
                /* Whether it ran without error only its submission's event says, on a
                 * device whose errors are not sticky: finish_member asks it. */
                for (int f = 0; f < r->cls->nflows; f++)
                    if (m->fresh[f] == s.copies[k].dst) {
                        m->filled |= 1u << f;
                        m->fill_sub[f] = (int16_t)s.sub_of[k];
                    }
            }
            m->in_need = CONVOY__MAX(m->in_need, s.sub_of[k]);
            continue;
        }
        if (s.failed[k]) {
            c->version = CONVOY__NO_VERSION;
            if (s.failed[k] == 2)
                convoy__devmem_pin(&p->mem, c, 0);
            continue;
        }
        c->version = convoy__coh_version(c->data);
        convoy__pev_t *ev = r->in_subs[s.sub_of[k]];
        if (c->arrival != NULL)
            convoy__pev_put(p, c->arrival);
        c->arrival = ev;
        if (ev != NULL)
            ev->refs++;
    }
    for (int i = 0; i < r->n; i++) {
        convoy__member_t *m = &r->m[i];
        for (int f = 0; f < r->cls->nflows && !m->fail; f++) {
            convoy__devcopy_t *c = m->copy[f];
            if (c == NULL || m->fresh[f] != NULL || !convoy__task_reads_datum(m->task, f) ||
                c->stage_ring != r->id)
                continue;
            int k = c->stage_slot;
            if (s.failed[k]) {
                convoy__member_fail(m, MEMBER_FAIL_STAGE_IN, f);
                snprintf(r->in_msg, sizeof(r->in_msg), "%s", s.msg);
            }
            m->in_need = CONVOY__MAX(m->in_need, s.sub_of[k]);
        }
    }
    free(slot);
    convoy__stage_put(p, &s);
}

/* The event of stage-in submission k or, when none was recorded for it (synchronised, or
 * failed), of the last earlier submission on the same stream that has one: streams run
 * in order, so it covers every copy before it. */
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
    /* Group 0 and at most one group per split submission: nin + 1 at most (n + 1 zeroed
     * 26 KiB for each ring of 256, which has one group). */
    r->groups = calloc((size_t)(CONVOY__MIN(n, r->nin) + 1), sizeof(convoy__group_t));
    int *key = malloc((size_t)n * sizeof(int)); /* -1 for group 0, else the split sub */
    /* Without in_split no one knows which stream a submission went on, so which event
     * covers a member's inputs: out of host memory as much as the others. */
    if (r->order == NULL || r->groups == NULL || key == NULL ||
        (r->nin > 0 && r->in_split == NULL)) {
        free(key);
        return -1;
    }
    int small_need = -1, last_small = -1;
    for (int k = 0; k < r->nin; k++)
        if (r->in_split == NULL || !r->in_split[k])
            last_small = k;
    for (int i = 0; i < n; i++) {
        int need = r->m[i].in_need;
        int split = need >= 0 && r->in_split != NULL && r->in_split[need];
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
        if (k >= 0) /* its small inputs travel on another stream: wait for them too */
            g->in_small_ev = last_small >= 0 ? recorded_at_or_before(r, last_small) : NULL;
        for (int i = first; i < o; i++)
            r->m[r->order[i]].group = r->ngroups - 1;
    }
    free(key);
    return 0;
}

/* Name, for each of the ring's quiet stage-in events (copies.c), the later event that
 * proves it over (convoy__pev_imply). Group 0's stream waited for the last small
 * submission its members need, so its launch's event proves that one and those before
 * it on their stream: a ring's start then makes one event of its own fewer, about 2 us
 * of a flag write on the H200 host (doc/design.md, "Quiet events"). A ring with split
 * groups, whose launches from the host poll its last small submission, or whose group 0
 * has no launch event, has an event recorded as usual behind them instead, so that no
 * launch waits for another group's. */
static void imply_stage_in(convoy__pipe_t *p, convoy__ring_t *r)
{
    convoy__pev_t *launch = NULL, *covered = NULL, *stand_in = NULL;
    int split = 0, made = 0;
    for (int k = 0; k < r->ngroups; k++) {
        if (r->groups[k].split) {
            split = 1;
        } else {
            launch = r->groups[k].exec_ev;
            covered = r->groups[k].in_ev;
        }
    }
    int by_launch = !split && launch != NULL && covered != NULL;
    for (int k = 0; k < r->nin; k++) {
        convoy__pev_t *e = r->in_subs[k];
        if (e != NULL && e->quiet && !e->done && e->implied_by == NULL) {
            if (by_launch) {
                convoy__pev_imply(e, launch);
            } else {
                if (!made) {
                    stand_in = convoy__pev_record(p, p->in);
                    made = 1;
                }
                convoy__pev_imply(e, stand_in); /* NULL: asked itself */
            }
        }
        if (e == covered)
            by_launch = 0; /* later ones were not waited for by group 0 */
    }
    convoy__pev_put(p, stand_in);
}

void convoy__ring_add(convoy__pipe_t *p, convoy__ring_t *r)
{
    r->next = NULL;
    convoy__ring_t **tail = &p->rings;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = r;
    p->nrings++;
}

/* Bytes of device memory the tasks from i on need, for eviction (inputs read in place
 * need none). */
static size_t bytes_from(const convoy__pipe_t *p, convoy__task_t **tasks, int i, int n)
{
    size_t b = 0;
    for (; i < n; i++) {
        int in_place = class_in_place(p, tasks[i]);
        for (int f = 0; f < tasks[i]->cls->nflows; f++)
            if (!in_place || !reads_in_place(p, tasks[i], f)) /* no device memory */
                b += tasks[i]->data[f]->bytes;
    }
    return b;
}

/* Out of memory for task i: push dirty copies home to make room, and defer the task (in
 * order) while anything can give memory back; 0 when nothing can: it fails. */
static int defer_for_memory(convoy__pipe_t *p, convoy__task_t **tasks, int i, int n, int kept,
                            convoy__task_t ***defer_tail)
{
    int evicting = convoy__evict_dirty(p, bytes_from(p, tasks, i, n));
    /* Pushouts in flight give memory back too: evicted copies are freed as they land,
     * others become clean and so evictable. */
    if (evicting == 0 && p->nrings == 0 && kept == 0 && p->outbound == NULL && p->neager == 0)
        return 0;
    convoy__task_t *t = tasks[i];
    t->next = NULL;
    **defer_tail = t;
    *defer_tail = &t->next;
    return 1;
}

/* Room for n members: a spare array (the smallest that fits), else a new one. Not
 * zeroed: each ring sets its members up as it fills them (convoy__member_init). */
static convoy__member_t *members_get(convoy__pipe_t *p, int n, int *cap_p)
{
    int best = -1;
    for (int i = 0; i < CONVOY__SPARE_MEMBERS; i++)
        if (p->spare_members[i].m != NULL && p->spare_members[i].cap >= n &&
            (best < 0 || p->spare_members[i].cap < p->spare_members[best].cap))
            best = i;
    if (best < 0) {
        *cap_p = n;
        return malloc((size_t)n * sizeof(convoy__member_t));
    }
    convoy__member_t *m = p->spare_members[best].m;
    *cap_p = p->spare_members[best].cap;
    p->spare_members[best].m = NULL;
    return m;
}

/* Keep a finished ring's members for later rings, in place of a smaller spare. */
static void members_put(convoy__pipe_t *p, convoy__member_t *m, int cap)
{
    int slot = 0; /* an empty slot, else the smallest spare */
    for (int i = 1; i < CONVOY__SPARE_MEMBERS; i++)
        if (p->spare_members[slot].m != NULL &&
            (p->spare_members[i].m == NULL || p->spare_members[i].cap < p->spare_members[slot].cap))
            slot = i;
    if (m == NULL || (p->spare_members[slot].m != NULL && p->spare_members[slot].cap >= cap)) {
        free(m);
        return;
    }
    free(p->spare_members[slot].m);
    p->spare_members[slot].m = m;
    p->spare_members[slot].cap = cap;
}

void convoy__ring_spares_free(convoy__pipe_t *p)
{
    for (int i = 0; i < CONVOY__SPARE_MEMBERS; i++) {
        free(p->spare_members[i].m);
        p->spare_members[i].m = NULL;
    }
}

convoy__ring_t *convoy__ring_new(convoy__pipe_t *p, convoy__task_t **tasks, int n, int kind)
{
    convoy__ring_t *r = NULL;
    if (kind == RING_DROP && p->fault_drop_rings > 0)
        p->fault_drop_rings--; /* as if out of host memory */
    else
        r = calloc(1, sizeof(*r));
    int cap = 0;
    convoy__member_t *m = r != NULL ? members_get(p, n, &cap) : NULL;
    if (m == NULL) {
        free(r);
        /* Drops need no ring to free their copies, and must: a copy holds no reference
         * on its datum, and the datum goes with the drop (devmem.c). */
        for (int i = 0; i < n; i++) {
            if (kind == RING_DROP) {
                convoy__devmem_drop(&p->mem, tasks[i]->data[0]);
                convoy__task_complete(tasks[i], CONVOY__OK, NULL);
                continue;
            }
            convoy__task_complete(tasks[i], CONVOY__FAILED,
                                  "out of host memory for the pipeline's ring state");
        }
        __atomic_fetch_sub(&p->dev->load, n, __ATOMIC_RELAXED);
        return NULL;
    }
    r->id = atomic_fetch_add(&p->ctx->next_ring_id, 1);
    r->kind = kind;
    r->pipe = p;
    r->cls = tasks[0]->cls; /* members complete, and may be freed, group by group */
    r->m = m;
    r->mcap = cap;
    return r;
}

void convoy__ring_start(convoy__pipe_t *p, convoy__task_t **tasks, int n)
{
    convoy_context_t *ctx = p->ctx;
    int internal = tasks[0]->cls->internal;
    if (internal != CONVOY__CLS_USER) {
        convoy__transfer_start(p, tasks, n,
                               internal == CONVOY__CLS_FLUSH       ? RING_FLUSH
                               : internal == CONVOY__CLS_FLUSH_ALL ? RING_FLUSH_ALL
                                                                   : RING_DROP);
        return;
    }
    uint64_t t0 = ctx->trace != NULL ? convoy__now_ns() : 0;
    convoy__ring_t *r = convoy__ring_new(p, tasks, n, RING_TASKS);
    if (r == NULL)
        return;
    convoy__bounce_expect(p);
    convoy__member_t *m = r->m;
    /* Reserve: a member that finds no memory while other work holds some waits for it
     * (deferred, in order); alone, it fails. */
    convoy__task_t **defer_tail = &p->deferred;
    while (*defer_tail != NULL)
        defer_tail = &(*defer_tail)->next;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        prefetch_data_list(tasks, i + 2 * RESERVE_AHEAD, n);
        prefetch_data(p, tasks, i + RESERVE_AHEAD, n);
        convoy__task_t *t = tasks[i];
        convoy__task_set_running(t);
        convoy__member_t *mm = &m[kept];
        convoy__member_init(mm, t, t->cls->nflows);
        convoy_status_t st;
        CONVOY__PROF_SUB(p, CONVOY__SUB_RESERVE, st = reserve_member(p, mm));
        if (st == CONVOY_ERR_NOMEM && defer_for_memory(p, tasks, i, n, kept, &defer_tail))
            continue;
        if (st != CONVOY_SUCCESS) {
            mm->fail = MEMBER_FAIL_MEMORY;
            mm->fail_status = st;
            snprintf(r->mem_msg, sizeof(r->mem_msg), "%s", convoy_last_error(NULL));
        }
        t->ring_id = r->id;
        kept++;
    }
    r->n = kept;
    if (ctx->trace != NULL) {
        convoy__trace_step(p, "reserve", t0, r->id, kept);
        t0 = convoy__now_ns();
    }
    if (kept == 0) {
        members_put(p, m, r->mcap);
        free(r);
        return;
    }
    atomic_fetch_add_explicit(&ctx->stats.rings, 1, memory_order_relaxed);
    r->open_members = kept;
    CONVOY__PROF_SUB(p, CONVOY__SUB_STAGE, stage_in(p, r));
    if (make_groups(r) != 0) {
        /* Out of host memory: every member fails, once the copies it holds have landed
         * (one group waiting on the last stage-in, never launched). */
        convoy__log_error("out of host memory grouping ring %lld", (long long)r->id);
        free(r->order);
        free(r->groups);
        r->order = NULL;
        r->groups = NULL;
        r->ngroups = 0;
        for (int i = 0; i < kept; i++)
            convoy__member_fail(&m[i], MEMBER_FAIL_STAGE_IN, 0);
    }
    if (ctx->trace != NULL)
        convoy__trace_step(p, "stage-in", t0, r->id, kept);
    for (int k = 0; k < r->ngroups; k++)
        if (!r->groups[k].split)
            CONVOY__PROF_SUB(p, CONVOY__SUB_LAUNCH, convoy__launch_group(p, r, &r->groups[k]));
    imply_stage_in(p, r);
    convoy__ring_add(p, r);
}

void convoy__ring_free(convoy__pipe_t *p, convoy__ring_t *r)
{
    for (int k = 0; k < r->ngroups; k++) /* a kept ring's too: the window stays open */
        convoy__push_behind_uncount(p, &r->groups[k]);
    if (r->leak) {
        /* A launch that could not be proven over may still write its members' results. */
        convoy__log_error("%s: ring %lld is kept in memory: a launch of it was never seen to "
                          "end",
                          p->dev->name, (long long)r->id);
        r->next = p->kept;
        p->kept = r;
        return;
    }
    for (int k = 0; k < r->nin; k++) {
        convoy__pev_poll(p, r->in_subs[k]); /* traced when seen complete; all are by now */
        convoy__pev_put(p, r->in_subs[k]);
    }
    for (int k = 0; k < r->ngroups; k++) {
        for (int i = 0; r->groups[k].tasks_held && i < r->groups[k].nrun; i++)
            convoy__task_unref(r->m[r->groups[k].run[i]].task);
        convoy__pev_put(p, r->groups[k].start_ev);
        convoy__pev_put(p, r->groups[k].exec_ev);
        for (int j = 0; j < r->groups[k].npush; j++)
            convoy__pev_put(p, r->groups[k].push_evs[j]);
        free(r->groups[k].push_evs);
        free(r->groups[k].launches);
        free(r->groups[k].run);
    }
    free(r->in_subs); /* in_split lies in its block */
    free(r->groups);
    free(r->order);
    free(r->held);
    free(r->held_again);
    members_put(p, r->m, r->mcap);
    free(r);
}

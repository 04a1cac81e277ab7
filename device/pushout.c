/*
 * Copies home: the internal transfer tasks (core.h, CONVOY__CLS_*) and eviction.
 *
 * - flush rings: each member brings one datum's dirty copy home; a ring's copies travel
 *   through the same copy plan as stage-in, fused and with large ones split out;
 * - flush-all (convoy_wait, fini): every dirty copy of the device, in one plan;
 * - drop (convoy_data_free): frees the datum's copy once nothing reads it any more;
 * - eviction: dirty unused copies pushed home together when a ring needs room, freed
 *   when they land.
 * Every pushout home in flight is on p->outbound with its event; outbound_poll retires
 * them as they land and tells coherence the host holds the version again. A pushout
 * that fails leaves the device copy as the newest version, to be tried again later.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pipeline_impl.h"
#include "src/coherence.h"

/* The pushout of c landed (failed: it did not): its bytes leave the bounce block for the
 * host memory, coherence learns it, the copy settles. A failed one leaves the host memory
 * untouched. */
static void landed(convoy__pipe_t *p, convoy__devcopy_t *c, int failed)
{
    convoy_data_t *d = c->data;
    if (c->bounce != NULL) {
        if (!failed)
            memcpy(d->host, c->bounce, d->bytes);
        c->bounce = NULL;
    }
    c->out_failed = failed;
    /* After the bytes: a free waiting for this may return and the host memory go. */
    atomic_fetch_sub_explicit(&d->pushing, 1, memory_order_release);
    if (!failed && convoy__coh_landed_home(d, c->out_version, p->dev->index))
        convoy__coh_note_host(d, c->out_version);
    if (failed && c->evicting)
        c->evict_failures++;
    /* Clean now, with nothing in flight: it leaves the written copies here, while its
     * lines are at hand, rather than in the next flush-all's walk (which found the
     * pushouts of tiny_tasks' 16384 outputs all landed, a miss or two each). */
    if (c->out_ev == NULL && !convoy__devmem_dirty(&p->mem, c))
        convoy__devmem_unnote_written(&p->mem, c);
    convoy__devmem_settle(&p->mem, c); /* may free c */
}

/* Retire a batch whose submission is over (failed: it did not land) and free it. A
 * bounced batch that landed is copied home first in one job, shared with the memcpy
 * helpers when large; landed() then finds nothing left to copy. */
static void retire(convoy__pipe_t *p, convoy__outbatch_t *b, int failed)
{
    if (!failed && b->bounce != NULL && convoy__bounce_spans(p, b->n) == 0) {
        int n = 0;
        for (int i = 0; i < b->n; i++) {
            convoy__devcopy_t *c = b->copies[i];
            if (c->bounce != NULL)
                p->spans[n++] = (convoy__span_t){
                    .dst = c->data->host, .src = c->bounce, .bytes = c->data->bytes};
            c->bounce = NULL;
        }
        p->bounced |= convoy__gang_copy(p->gang, p->spans, n, CONVOY__BOUNCE_GANG_MIN);
    }
    for (int i = 0; i < b->n; i++) {
        b->copies[i]->out_ev = NULL;
        convoy__devmem_out_over(&p->mem, b->copies[i]);
        landed(p, b->copies[i], failed);
    }
    convoy__bounce_put(p, b->bounce, 0);
    convoy__pev_put(p, b->ev);
    p->out_bytes -= b->bytes;
    free(b);
}

int convoy__outbound_poll(convoy__pipe_t *p)
{
    int moved = 0;
    for (convoy__outbatch_t **bp = &p->outbound; *bp != NULL;) {
        convoy__outbatch_t *b = *bp;
        if (!convoy__pev_poll(p, b->ev)) {
            bp = &b->next;
            continue;
        }
        *bp = b->next;
        retire(p, b, b->ev->failed);
        moved = 1;
    }
    return moved;
}

void convoy__outbound_drop(convoy__pipe_t *p)
{
    while (p->outbound != NULL) {
        convoy__outbatch_t *b = p->outbound;
        p->outbound = b->next;
        retire(p, b, !convoy__pev_poll(p, b->ev) || b->ev->failed);
    }
    convoy__bounce_drop(p);
}

/*
 * Push copies[0..n) home in one plan (stage_kind OUT, BEHIND or EVICT). Each copy's pushout is
 * put on p->outbound; ok[i] says whether copy i was enqueued (a failure leaves it dirty;
 * msg gets the first cause). Copies proven landed at once (no event, stream waited for)
 * are settled here. counted: each datum's `pushing` already counts this pushout (the
 * count eager_add took, handed over), which landed() gives back.
 */
static void push_home(convoy__pipe_t *p, convoy__devcopy_t **copies, int n, int stage_kind,
                      int counted, char *ok, char *msg, size_t msg_len)
{
    if (n <= 0)
        return;
    for (int i = 0; i < n && !counted; i++) /* each reaches landed() once */
        atomic_fetch_add_explicit(&copies[i]->data->pushing, 1, memory_order_relaxed);
    convoy__stage_t s;
    if (convoy__stage_get(p, &s, n) != 0) {
        snprintf(msg, msg_len, "out of host memory for a pushout of %d copies", n);
        memset(ok, 0, (size_t)n);
        for (int i = 0; i < n; i++)
            landed(p, copies[i], 1);
        return;
    }
    for (int i = 0; i < n; i++) {
        convoy_data_t *d = copies[i]->data;
        s.copies[i] = (convoy__copy_t){.dst = d->host,
                                       .src = copies[i]->ptr,
                                       .bytes = d->bytes,
                                       .dir = CONVOY__D2H,
                                       .flags = d->host_pinned ? CONVOY__COPY_HOST_PINNED : 0,
                                       .tag = i};
    }
    s.n = n;
    convoy__stage_issue(p, -1, &s, stage_kind, p->out, p->out_large);
    if (s.msg[0] != '\0')
        snprintf(msg, msg_len, "%s", s.msg);
    /* One batch per submission with an event; the copies of the others are settled now:
     * failed, or proven landed by a stream wait. */
    int *count = calloc((size_t)(s.plan.nsubs > 0 ? s.plan.nsubs : 1), sizeof(int));
    convoy__outbatch_t **batch =
        calloc((size_t)(s.plan.nsubs > 0 ? s.plan.nsubs : 1), sizeof(*batch));
    for (int i = 0; i < n && count != NULL; i++)
        if (!s.failed[i] && s.subs[s.sub_of[i]] != NULL)
            count[s.sub_of[i]]++;
    for (int k = 0; k < s.plan.nsubs && count != NULL && batch != NULL; k++)
        if (count[k] > 0 &&
            (batch[k] = malloc(sizeof(**batch) + (size_t)count[k] * sizeof(convoy__devcopy_t *)))) {
            *batch[k] = (convoy__outbatch_t){.ev = s.subs[k], .bounce = s.bounce[k]};
            s.subs[k]->refs++;
            s.bounce[k] = NULL;
        }
    for (int i = 0; i < n; i++) {
        convoy__devcopy_t *c = copies[i];
        ok[i] = s.failed[i] == 0;
        if (s.failed[i] == 2)
            convoy__devmem_pin(&p->mem, c, 1); /* it may still be read: never reuse it */
        c->out_version = c->version;
        c->bounce = s.failed[i] ? NULL : s.bounced[i];
        convoy__pev_t *ev = s.failed[i] ? NULL : s.subs[s.sub_of[i]];
        if (ev != NULL && (batch == NULL || batch[s.sub_of[i]] == NULL)) {
            /* No memory to track it: wait for it here rather than lose it. */
            while (!convoy__pev_poll(p, ev))
                convoy__sleep_until_ns(convoy__now_ns() + 20000);
            landed(p, c, ev->failed);
            continue;
        }
        if (ev == NULL) {
            landed(p, c, s.failed[i] != 0);
            continue;
        }
        convoy__outbatch_t *b = batch[s.sub_of[i]];
        b->copies[b->n++] = c;
        b->bytes += c->data->bytes;
        p->out_bytes += c->data->bytes;
        c->out_ev = ev;
    }
    for (int k = 0; k < s.plan.nsubs && batch != NULL; k++)
        if (batch[k] != NULL) {
            batch[k]->next = p->outbound;
            p->outbound = batch[k];
        }
    free(count);
    free(batch);
    /* Blocks no batch took: their copies landed above (waited for, or synchronised) or
     * were never enqueued, unless one may still run. */
    for (int k = 0; k < s.plan.nsubs; k++) {
        if (s.bounce[k] == NULL)
            continue;
        const convoy__submission_t *sub = &s.plan.subs[k];
        int unknown = 0;
        for (int j = 0; j < sub->count; j++)
            unknown |= s.failed[s.copies[sub->first + j].tag] == 2;
        convoy__bounce_put(p, s.bounce[k], unknown);
    }
    for (int k = 0; k < s.plan.nsubs; k++)
        convoy__pev_put(p, s.subs[k]);
    convoy__stage_put(p, &s);
}

int convoy__evict_dirty(convoy__pipe_t *p, size_t want)
{
    convoy__devcopy_t *victims[CONVOY__RING_CAP];
    int n = convoy__devmem_take_dirty(&p->mem, want, 3, victims, CONVOY__RING_CAP);
    if (n == 0)
        return 0;
    char ok[CONVOY__RING_CAP], msg[256] = "";
    push_home(p, victims, n, CONVOY__STAGE_EVICT, 0, ok, msg, sizeof(msg));
    if (msg[0] != '\0')
        convoy__log_warn("%s: pushing evicted copies home failed (%s); they stay on the device",
                         p->dev->name, msg);
    return n;
}

int convoy__eager_add(convoy__pipe_t *p, convoy__devcopy_t *c, int demand)
{
    if (p->neager == p->eager_cap) {
        int cap = p->eager_cap ? 2 * p->eager_cap : 256;
        convoy__devcopy_t **e = realloc(p->eager, (size_t)cap * sizeof(*e));
        if (e == NULL)
            return 0;
        p->eager = e;
        p->eager_cap = cap;
    }
    p->eager[p->neager++] = c;
    p->eager_bytes += c->data->bytes;
    atomic_fetch_add_explicit(&c->data->pushing, 1, memory_order_relaxed);
    p->eager_demand |= demand;
    return 1;
}

/* Let go of a copy eager_add held without pushing it: its datum's count first, as the
 * release may free the copy and with it the datum. */
void convoy__eager_release(convoy__pipe_t *p, convoy__devcopy_t *c)
{
    atomic_fetch_sub_explicit(&c->data->pushing, 1, memory_order_release);
    convoy__devmem_release(&p->mem, c);
}

void convoy__behind_epoch(convoy__pipe_t *p)
{
    unsigned e = 1 + atomic_load_explicit(&p->ctx->wait_epoch, memory_order_relaxed);
    e += e == 0; /* 0 means unmarked */
    if (e != p->behind_epoch) {
        p->behind_epoch = e;
        p->behind_sent = p->behind_wasted = 0;
    }
}

/* Copies were written behind: mark them, and stop writing behind for the rest of the
 * epoch (until the next convoy_wait) when more than a quarter of the last 256 were
 * overwritten here before anything read them home (an acquire, a CPU task, a stage-in
 * elsewhere: convoy__coh_read_home). A lane sees only its own overwrites: with lanes, a
 * datum overwritten on another lane is not counted. chains --ping-pong, whose outputs
 * the next step overwrites, pushed 2-4x its final bytes and ran 27-35% slower on the
 * H200 without this (doc/results.md, 2026-12-03). */
static void behind_sent(convoy__pipe_t *p, convoy__devcopy_t **copies, const char *ok, int n)
{
    for (int i = 0; i < n; i++)
        if (ok[i]) {
            copies[i]->behind_epoch = p->behind_epoch;
            atomic_store_explicit(&copies[i]->data->behind_unread, 1, memory_order_relaxed);
            p->behind_sent++;
        }
    if (p->behind_sent < 256)
        return;
    if (4 * p->behind_wasted > p->behind_sent) {
        p->behind_off = p->behind_epoch;
        convoy__log_debug("%s: write-behind off until the next wait: %d of the last %d copies "
                          "written behind were overwritten here first",
                          p->dev->name, p->behind_wasted, p->behind_sent);
    }
    p->behind_sent = p->behind_wasted = 0;
}

void convoy__push_eager(convoy__pipe_t *p)
{
    int n = 0;
    for (int i = 0; i < p->neager; i++) {
        convoy__devcopy_t *c = p->eager[i];
        if (c->out_ev == NULL && convoy__devmem_dirty(&p->mem, c))
            p->eager[n++] = c;
        else
            convoy__eager_release(p, c);
    }
    char *ok = n > 0 ? malloc((size_t)n) : NULL;
    char msg[256] = "";
    if (ok != NULL) {
        /* The count eager_add took goes with the pushout (landed() gives it back): two
         * locked instructions a copy fewer than a count of each (bench/host_profile.py). */
        push_home(p, p->eager, n, p->eager_demand ? CONVOY__STAGE_OUT : CONVOY__STAGE_BEHIND, 1, ok,
                  msg, sizeof(msg));
        if (!p->eager_demand)
            behind_sent(p, p->eager, ok, n);
    }
    /* A failure here is no one's: the copy stays dirty, and the next flush that needs it
     * pushes it again (transfer_progress). */
    for (int i = 0; i < n; i++) {
        if (ok != NULL)
            convoy__devmem_release(&p->mem, p->eager[i]);
        else
            convoy__eager_release(p, p->eager[i]);
    }
    free(ok);
    p->neager = 0;
    p->eager_bytes = 0;
    p->eager_demand = 0;
}

/* ---- transfer rings ----------------------------------------------------------------- */

/* Complete member m of a transfer ring: its copy's pushout (if any) is over. */
static void finish_transfer(convoy__pipe_t *p, convoy__ring_t *r, convoy__member_t *m)
{
    convoy__task_t *t = m->task;
    convoy__devcopy_t *c = m->ncopies > 0 ? m->copy[0] : NULL;
    char msg[512] = "";
    if (m->fail == MEMBER_OK && c != NULL && c->out_failed &&
        convoy__coh_dirty_on(c->data) == p->dev->index)
        m->fail = MEMBER_FAIL_PUSHOUT;
    if (m->fail != MEMBER_OK) {
        /* A flush-all has no flow: its failure names no datum. */
        const convoy_data_t *d = c != NULL ? c->data : t->cls->nflows > 0 ? t->data[0] : NULL;
        const char *why = r->out_msg[0]       ? r->out_msg
                          : p->ev_fail_msg[0] ? p->ev_fail_msg
                                              : "an earlier pushout of it failed";
        if (d != NULL)
            snprintf(msg, sizeof(msg),
                     "pushing datum %llu (%zu bytes) home from %s failed: %s; the device copy "
                     "stays the newest version",
                     (unsigned long long)d->id, d->bytes, p->dev->name, why);
        else
            snprintf(msg, sizeof(msg),
                     "pushing data home from %s failed: %s; the device copies stay the newest "
                     "versions",
                     p->dev->name,
                     r->out_msg[0]   ? r->out_msg
                     : r->mem_msg[0] ? r->mem_msg
                                     : why);
    }
    if (c != NULL) {
        convoy__devmem_release(&p->mem, c);
        if (r->kind == RING_DROP)
            convoy__devmem_drop(&p->mem, t->data[0]);
    }
    m->ncopies = 0;
    m->completed = 1;
    r->open_members--;
    p->done_load++;
    convoy__task_complete_in(t, m->fail == MEMBER_OK ? CONVOY__OK : CONVOY__FAILED, msg, &p->done);
}

/* Does a flush-all (with_resident or not) bring d home? */
static int flush_owes(const convoy_data_t *d, int with_resident)
{
    unsigned flags = atomic_load(&d->flags);
    return !(flags & CONVOY_DATA_SCRATCH) && (with_resident || !(flags & CONVOY_DATA_RESIDENT));
}

/* Does c hold the version the last task inserted to write its datum wrote (no later task
 * overwrites it)? */
static int final_version(const convoy__devcopy_t *c)
{
    return c->writer_id == atomic_load_explicit(&c->data->last_writer_id, memory_order_acquire);
}

/* Flush-all: hold every dirty copy to push (and those already on their way home); with
 * only_final, only final versions (written by the datum's last writer inserted: no later
 * task will overwrite them), so that nothing pushed now is pushed again. Only copies a
 * task wrote here can be dirty: the walk goes through those (p->mem.written), not every
 * copy of the device (in tiny_tasks, three in four copies are inputs, each a miss or two:
 * the walk of all was about 6 ms of a wait's flush on the H200 host, 2026-12-02). A copy
 * leaves that list when its pushout lands (landed()); one the walk still finds clean with
 * nothing in flight leaves it here. */
static int hold_dirty(convoy__pipe_t *p, convoy__ring_t *r, int with_resident, int only_final)
{
    int n = 0, cap = 0;
    convoy__devcopy_t **held = NULL;
    for (convoy__devcopy_t *c = p->mem.written, *next; c != NULL; c = next) {
        next = c->written_next;
        /* Clean and with nothing in flight, it stays clean until a task writes it again.
         * A pinned copy whose pushout could not be proven over still holds the newest
         * version (only read since): it is dirty, and pushed again, else it would be lost. */
        if (c->out_ev == NULL && !convoy__devmem_dirty(&p->mem, c)) {
            convoy__devmem_unnote_written(&p->mem, c);
            continue;
        }
        /* One on its way home is waited for whatever its flags (made resident or scratch
         * after its pushout began): nothing writes host memory once the wait returns. */
        if (c->out_ev == NULL && !flush_owes(c->data, with_resident))
            continue;
        if (only_final && c->out_ev == NULL && !final_version(c))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            convoy__devcopy_t **h = realloc(held, (size_t)cap * sizeof(*h));
            if (h == NULL) {
                free(held);
                return -1;
            }
            held = h;
        }
        held[n++] = c;
    }
    uint8_t *again = calloc((size_t)(n > 0 ? n : 1), 1);
    if (again == NULL) {
        free(held);
        return -1;
    }
    for (int i = 0; i < n; i++)
        convoy__devmem_lookup(&p->mem, held[i]->data); /* one user each, off the LRU */
    r->held = held;
    r->held_again = again;
    r->nheld = n;
    return n;
}

/* A flush-all remembers that a pushout of its own failed at its submission (ok[i] 0):
 * counted when it ends, even if another push brings the copy home first. */
static void note_own_failures(convoy__ring_t *r, const char *ok, int n)
{
    for (int i = 0; i < n && r->kind == RING_FLUSH_ALL; i++)
        r->own_failed |= !ok[i];
}

void convoy__transfer_start(convoy__pipe_t *p, convoy__task_t **tasks, int n, int kind)
{
    uint64_t t0 = p->ctx->trace != NULL ? convoy__now_ns() : 0;
    convoy__ring_t *r = convoy__ring_new(p, tasks, n, kind);
    if (r == NULL)
        return;
    if (kind == RING_DROP)
        atomic_fetch_add_explicit(&p->drop_rings, 1, memory_order_relaxed);
    convoy__member_t *m = r->m;
    r->n = r->open_members = n;
    for (int i = 0; i < n; i++) {
        convoy__task_set_running(tasks[i]);
        convoy__member_init(&m[i], tasks[i], 0);
        tasks[i]->ring_id = r->id;
    }
    convoy__devcopy_t **push = NULL;
    int npush = 0;
    if (kind == RING_FLUSH_ALL) {
        const int *how = tasks[0]->args; /* with_resident, only_final */
        if (hold_dirty(p, r, how[0], how[1]) < 0) {
            snprintf(r->out_msg, sizeof(r->out_msg), "out of host memory listing dirty copies");
            m[0].fail = MEMBER_FAIL_PUSHOUT;
        }
        push = malloc((size_t)(r->nheld > 0 ? r->nheld : 1) * sizeof(*push));
        for (int i = 0; i < r->nheld && push != NULL; i++)
            if (r->held[i]->out_ev == NULL && convoy__devmem_dirty(&p->mem, r->held[i])) {
                r->held[i]->stage_ring = r->id; /* pushed by this ring: not again */
                push[npush++] = r->held[i];
            }
    } else {
        push = malloc((size_t)(n > 0 ? n : 1) * sizeof(*push));
        for (int i = 0; i < n; i++) {
            convoy__devcopy_t *c = convoy__devmem_lookup(&p->mem, tasks[i]->data[0]);
            if (c == NULL)
                continue;
            m[i].copy[0] = c;
            m[i].ncopies = 1;
            if (kind == RING_FLUSH)
                c->behind_epoch = 0; /* its version is needed home: not pushed for nothing */
            /* Two flushes of one datum in a ring push it once (marked with the ring). */
            if (kind == RING_FLUSH && push != NULL && c->out_ev == NULL && c->stage_ring != r->id &&
                convoy__devmem_dirty(&p->mem, c)) {
                c->stage_ring = r->id;
                push[npush++] = c;
            }
        }
    }
    if (push == NULL) {
        snprintf(r->out_msg, sizeof(r->out_msg), "out of host memory for a pushout");
        for (int i = 0; i < n; i++)
            convoy__member_fail(&m[i], MEMBER_FAIL_PUSHOUT, 0);
    } else if (npush > 0) {
        char *ok = malloc((size_t)npush);
        if (ok == NULL) {
            snprintf(r->out_msg, sizeof(r->out_msg), "out of host memory for a pushout");
            for (int i = 0; i < n; i++)
                convoy__member_fail(&m[i], MEMBER_FAIL_PUSHOUT, 0);
        } else {
            push_home(p, push, npush, CONVOY__STAGE_OUT, 0, ok, r->out_msg, sizeof(r->out_msg));
            note_own_failures(r, ok, npush);
            free(ok);
        }
    }
    free(push);
    if (p->ctx->trace != NULL)
        convoy__trace_step(p,
                           kind == RING_FLUSH  ? "start flushes"
                           : kind == RING_DROP ? "start drops"
                                               : "start flush-all",
                           t0, r->id, n);
    convoy__ring_add(p, r);
}

/* Is everything member m (or the flush-all) waits for back home? */
static int transfer_ready(const convoy__ring_t *r, const convoy__member_t *m)
{
    if (r->kind == RING_FLUSH_ALL) {
        for (int i = 0; i < r->nheld; i++)
            if (r->held[i]->out_ev != NULL)
                return 0;
        return 1;
    }
    return m->ncopies == 0 || m->copy[0]->out_ev == NULL;
}

/* Did a pushout this flush waited for, not its own (written behind, a wait's eager push,
 * another flush's), leave c the newest version here: it failed, or it carried an older
 * version (a writer's fresh buffer replaced the copy meanwhile: finish_member)? */
static int owed_elsewhere(const convoy__pipe_t *p, const convoy__ring_t *r,
                          const convoy__devcopy_t *c)
{
    return (c->out_failed || c->out_version != c->version) && c->stage_ring != r->id &&
           convoy__coh_dirty_on(c->data) == p->dev->index;
}

/* Does a flush owe c's version home? A flush-all (how: with_resident, only_final; NULL
 * for a flush of one datum) owes it by its datum's flags, and a wait's early flush-all
 * (only_final) only a version no later task overwrites: a newer one that replaced a
 * version on its way home waits for the wait's last flush-all, or would go home twice. */
static int owes_now(const int *how, const convoy__devcopy_t *c)
{
    return how == NULL ||
           (flush_owes(c->data, how[0]) && (!how[1] || c->out_failed || final_version(c)));
}

/* Push the copies of r that owed_elsewhere home again: that pushout's failure was no
 * one's, or its version is not the newest, and this flush owes their versions home. Each
 * once per flush (again[i], beside copies[i]): the copy's own mark of who pushed it last
 * (stage_ring) is shared, and where every push fails at once (a lost device) two flushes
 * owing one copy took it from each other and pushed it again in turn for ever. Returns 1
 * when it pushed any (r waits for them; a failure of its own push fails r, as for its
 * first). */
static int push_again(convoy__pipe_t *p, convoy__ring_t *r, convoy__devcopy_t **copies,
                      uint8_t *again, int n)
{
    const int *how = r->kind == RING_FLUSH_ALL ? r->m[0].task->args : NULL;
    int k = 0;
    /* Rare: move them to the front of copies (its order does not matter), with their
     * marks. */
    for (int i = 0; i < n; i++)
        if (!again[i] && owed_elsewhere(p, r, copies[i]) && owes_now(how, copies[i])) {
            convoy__devcopy_t *c = copies[i];
            copies[i] = copies[k];
            copies[k] = c;
            again[i] = again[k];
            again[k++] = 1;
            c->stage_ring = r->id;
        }
    /* In slices of a buffer on the stack: nothing to allocate, so no failure of its own
     * (push_home's failures leave out_failed set, which fails r). */
    char ok[512];
    for (int i = 0; i < k; i += (int)sizeof(ok)) {
        int nk = k - i < (int)sizeof(ok) ? k - i : (int)sizeof(ok);
        push_home(p, copies + i, nk, CONVOY__STAGE_OUT, 0, ok, r->out_msg, sizeof(r->out_msg));
        note_own_failures(r, ok, nk);
    }
    return k > 0;
}

int convoy__transfer_progress(convoy__pipe_t *p, convoy__ring_t *r)
{
    int moved = 0, finished = 0;
    uint64_t t0 = p->ctx->trace != NULL ? convoy__now_ns() : 0;
    convoy__queue_hold(p->ctx, 1); /* the CPU tasks waiting for these, pushed together */
    for (int i = 0; i < r->n; i++) {
        convoy__member_t *m = &r->m[i];
        if (m->completed || !transfer_ready(r, m))
            continue;
        if ((r->kind == RING_FLUSH_ALL && push_again(p, r, r->held, r->held_again, r->nheld)) ||
            (r->kind == RING_FLUSH && m->ncopies > 0 &&
             push_again(p, r, m->copy, &m->pushed_again, 1))) {
            moved = 1;
            continue;
        }
        if (r->kind == RING_FLUSH_ALL) {
            for (int k = 0; k < r->nheld; k++) {
                convoy__devcopy_t *c = r->held[k];
                if (c->out_failed && convoy__coh_dirty_on(c->data) == p->dev->index &&
                    m->fail == MEMBER_OK) {
                    m->fail = MEMBER_FAIL_PUSHOUT;
                    m->copy[0] = c; /* named in the message */
                    m->ncopies = 1;
                    c->users++; /* finish_transfer releases it */
                }
                convoy__devmem_release(&p->mem, c);
            }
            r->nheld = 0;
            /* A push of its own failed at its submission and another push (the wait's own
             * flush after its early flush, an eviction) brought the copy home before this
             * one looked: counted all the same (convoy.h, transfers_failed), before the
             * member completes, as count_outcome counts one that looked first and failed. */
            if (r->own_failed && m->fail == MEMBER_OK)
                atomic_fetch_add(&p->ctx->stats.transfers_failed, 1);
            r->own_failed = 0;
        }
        finish_transfer(p, r, m);
        finished++;
        moved = 1;
    }
    convoy__queue_hold(p->ctx, 0);
    if (finished > 0 && p->ctx->trace != NULL)
        convoy__trace_step(p, "finish transfers", t0, r->id, finished);
    return moved;
}

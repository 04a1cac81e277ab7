/*
 * Ready queues' wake-ups and the CPU workers.
 */
#include "config.h"

#include <errno.h>
#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/host/host.h"
#include "src/bind.h"
#include "src/core.h"

#define CONVOY__CPU_RING_MAX 64 /* tasks a CPU worker takes at once */

/* A CPU worker's next task: the first CPU task made ready by the completion of the last
 * task the worker ran (its successor) is kept here and run next instead of going through
 * the queue, so a chain of CPU tasks costs no push, pop or wake-up per task. Only then
 * (convoy__cpu_slot_open): a task made ready while a chore runs, or by an earlier member
 * of a ring, would wait unseen behind the rest of the chore or ring while other workers
 * sleep (a chore that waits for its child's result by its own means would hang). At most
 * CONVOY__CPU_SLOT_RUNS in a row: then the queue's tasks get their turn. */
#define CONVOY__CPU_SLOT_RUNS 64

typedef struct cpu_slot {
    convoy_context_t *ctx; /* the worker's context; NULL on other threads */
    convoy__task_t *next;
    int open; /* the worker is completing the last task it ran */
    int runs; /* tasks run from the slot since the last pop */
} cpu_slot_t;

static __thread cpu_slot_t slot;

void convoy__cpu_slot_open(int open)
{
    slot.open = open;
}

/*
 * The CPU tasks a progress thread makes ready while it completes a group of ring members,
 * held back and pushed together (convoy__queue_hold): each push to the CPUs' queue takes
 * the lines that its polling worker reads in turn (the tasks pushed, their count, the
 * count of pushes), and one by one a ring's 31 CPU successors became ready about 0.9 us
 * apart in mixed_latency's trace on the H200 host, the pace of the progress thread, while
 * the worker ran each in 0.2-0.4 us. The pushes of a pass take 1, 2, 4, then up to
 * CONVOY__HOLD_MAX tasks: the first task goes at once, so the worker starts while the
 * thread completes the next ones (held 8 from the first, a pass's first successors waited
 * for 7 completions; with that and the completion loop's prefetch, mixed_latency's p50
 * was higher than before in 5 turns of 7 on the H200, by up to 18 us, within its spread
 * of 10-20 us). A completion callback runs with the hold pushed and paused
 * (convoy__queue_hold_pause): what it inserts may wait for a task held here.
 */
typedef struct push_hold {
    convoy_context_t *ctx; /* NULL: not holding */
    int n, limit;          /* held, and how many the next push takes */
    convoy__task_t *tasks[CONVOY__HOLD_MAX];
} push_hold_t;

static __thread push_hold_t hold;

static void hold_flush(void)
{
    if (hold.n == 0) /* tasks are held only while hold.ctx is set */
        return;
    convoy_context_t *ctx = hold.ctx;
    int wake = 0;
    if (ctx->sched->push_many != NULL)
        wake = ctx->sched->push_many(ctx->sched_state, 0, hold.tasks, hold.n);
    else
        for (int i = 0; i < hold.n; i++)
            wake |= ctx->sched->push(ctx->sched_state, 0, hold.tasks[i]);
    hold.n = 0;
    hold.limit = CONVOY__MIN(2 * hold.limit, CONVOY__HOLD_MAX);
    if (wake)
        convoy__queue_wake(ctx, 0);
}

convoy_context_t *convoy__queue_hold_pause(void)
{
    convoy_context_t *ctx = hold.ctx;
    hold_flush();
    hold.ctx = NULL;
    return ctx;
}

void convoy__queue_hold(convoy_context_t *ctx, int on)
{
    convoy__queue_hold_pause(); /* nothing is held when a hold starts: holds do not nest */
    if (on) {
        hold.ctx = ctx;
        hold.limit = 1;
    }
}

void convoy__queue_hold_resume(convoy_context_t *ctx)
{
    hold.ctx = ctx;
}

void convoy__queue_push(convoy_context_t *ctx, int queue, convoy__task_t *task)
{
    if (queue == 0 && slot.open && slot.ctx == ctx && slot.next == NULL &&
        slot.runs < CONVOY__CPU_SLOT_RUNS) {
        slot.next = task;
        return;
    }
    if (queue == 0 && hold.ctx == ctx) {
        hold.tasks[hold.n++] = task;
        if (hold.n >= hold.limit)
            hold_flush();
        return;
    }
    if (queue > 0 && !convoy__task_internal(task))
        __atomic_fetch_add(&ctx->accel[queue - 1]->queued, 1, __ATOMIC_RELAXED);
    int wake = ctx->sched->push(ctx->sched_state, queue, task);
    if (wake)
        convoy__queue_wake(ctx, queue);
}

static void wake_one(convoy__queue_wait_t *w)
{
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* Wake one sleeping CPU worker to be the poller, unless a worker polls already or one is
 * on its way to: a burst of pushes (a ring's completion making its successors ready)
 * costs the pusher one wake-up, not one per task. One each, a GPU's progress thread
 * completing a ring took the lock of the woken workers over and over, and its CPU
 * successors became ready in groups 45 us apart on the H200 host (doc/results.md,
 * 2026-12-01). The woken worker hands the watch on when it goes to work (worker_main). */
static int wake_poller(convoy__queue_wait_t *w)
{
    int none = 0, woke = 0;
    if (atomic_load(&w->sleepers) == 0 || !atomic_compare_exchange_strong(&w->spinners, &none, 1))
        return 0;
    pthread_mutex_lock(&w->lock);
    if (atomic_load(&w->sleepers) > 0) {
        atomic_fetch_add(&w->watches, 1);
        pthread_cond_signal(&w->cond);
        woke = 1;
    } else {
        atomic_fetch_sub(&w->spinners, 1); /* all awake: they see the push themselves */
    }
    pthread_mutex_unlock(&w->lock);
    return woke;
}

/* Pushes, sleepers and spinners are sequentially consistent atomics: a pusher bumps
 * `pushes` then reads `spinners` and `sleepers`; a sleeper bumps `sleepers` then reads
 * `pushes` (under the lock, which it holds into the wait); a spinner reads `pushes`
 * again after it stops spinning and before it sleeps. So a push that finds a spinner
 * needs no wake-up: that spinner, or the one it hands over to (worker_main), sees it.
 * A push takes no lock while a consumer is awake to see it. Device queues have one
 * consumer (their progress thread), woken directly. */
void convoy__queue_wake(convoy_context_t *ctx, int queue)
{
    convoy__queue_wait_t *w = &ctx->qwait[queue];
    atomic_fetch_add(&w->pushes, 1);
    if (atomic_load(&w->spinners) != 0 || atomic_load(&w->sleepers) == 0)
        return;
    if (queue != 0)
        wake_one(w);
    else if (!wake_poller(w))
        return;
    atomic_fetch_add_explicit(&w->signals, 1, memory_order_relaxed);
}

/* Only when every worker sleeps: a worker that is running tasks polls when it is done
 * (a wake-up on its way does not stop it, worker_main), sooner than a sleeper woken now
 * would start (tens of us on the H200 host; mixed_latency's trace, 2026-12-01 night). */
void convoy__cpu_poller_wake(convoy_context_t *ctx)
{
    convoy__queue_wait_t *w = &ctx->qwait[0];
    if (ctx->busy_poll && atomic_load(&w->spinners) == 0 &&
        atomic_load(&w->sleepers) == ctx->nworkers && wake_poller(w))
        atomic_fetch_add_explicit(&w->signals, 1, memory_order_relaxed);
}

void convoy__queues_expedite(convoy_context_t *ctx, int begin)
{
    if (ctx->sched->expedite == NULL)
        return;
    ctx->sched->expedite(ctx->sched_state, begin);
    /* A consumer asleep towards a ring's deadline looks again now. */
    for (int q = 0; begin && q < ctx->nqueues; q++)
        convoy__queue_wake(ctx, q);
}

void convoy__queue_close(convoy_context_t *ctx, int queue)
{
    convoy__queue_wait_t *w = &ctx->qwait[queue];
    atomic_fetch_add(&w->pushes, 1); /* a poller sees it too */
    pthread_mutex_lock(&w->lock);
    w->closed = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

uint64_t convoy__queue_pushes(convoy_context_t *ctx, int queue)
{
    return atomic_load(&ctx->qwait[queue].pushes);
}

int convoy__queue_sleep(convoy_context_t *ctx, int queue, uint64_t seen, uint64_t deadline_ns)
{
    convoy__queue_wait_t *w = &ctx->qwait[queue];
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    pthread_mutex_lock(&w->lock);
    atomic_fetch_add(&w->sleepers, 1);
    /* A closed queue's sleeps end at once: its consumer stops. Closed under this lock, so a
     * consumer that read `seen` after its stop's wake-up sleeps no more (a progress thread
     * did: it hung convoy_fini). Each queue closes on its own: the workers' stop leaves
     * the progress threads asleep while the workers are joined (they polled before). */
    while (atomic_load(&w->pushes) == seen && atomic_load(&w->watches) == 0 && !w->closed) {
        if (deadline_ns == UINT64_MAX)
            pthread_cond_wait(&w->cond, &w->lock);
        else if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) == ETIMEDOUT)
            break;
    }
    /* Any sleeper may take the watch a wake-up left: whoever leaves first polls. */
    int watch = atomic_load(&w->watches) > 0;
    if (watch)
        atomic_fetch_sub(&w->watches, 1);
    atomic_fetch_sub(&w->sleepers, 1);
    pthread_mutex_unlock(&w->lock);
    return watch;
}

/* Tasks in flight on the accelerators: their completions may make CPU tasks ready. */
static int accel_busy(convoy_context_t *ctx)
{
    for (int i = 0; i < ctx->naccel; i++)
        if (__atomic_load_n(&ctx->accel[i]->load, __ATOMIC_RELAXED) > 0)
            return 1;
    return 0;
}

/* Poll the queue's push count before sleeping: for up to spin_ns, or busy_ns while tasks
 * are in flight on an accelerator. A sleeping worker costs a wake-up per task when tasks
 * trickle in, and starts tens of us after it (doc/design.md). Not while only CPU tasks
 * are in flight: the worker that runs them polls when it is done, and a second poller
 * only sends it to sleep (bench/overhead chained on the H200 host: 0.9-1.1 us a task
 * became 1.5-1.6). Idle means idle for spin_ns: an accelerator is idle for moments
 * between a ring's completion and the pushouts or the ring after it, and a poller that
 * left at the first such moment slept through the CPU tasks that came next
 * (mixed_latency's trace, doc/results.md, 2026-12-01 night). Past spin_ns it yields its
 * core at each poll: on a machine with fewer cores than busy threads (2 cores, a sim
 * device's threads) a poller that kept its core would slow the thread whose work it
 * waits for. */
static void queue_spin(convoy_context_t *ctx, int queue, uint64_t seen, uint64_t spin_ns,
                       uint64_t busy_ns)
{
    uint64_t start = convoy__now_ns(), busy_at = start;
    int yielding = 0;
    for (int i = 0; convoy__queue_pushes(ctx, queue) == seen && !atomic_load(&ctx->stopping); i++) {
        /* The clock and the devices' loads every 64 polls (every 8 when yielding): each
         * read of a load pulls a line the progress thread writes per task. */
        if ((i & (yielding ? 7 : 63)) == 0 && i > 0) {
            uint64_t now = convoy__now_ns();
            int busy = busy_ns > spin_ns && accel_busy(ctx);
            if (busy)
                busy_at = now;
            if (now - start >= busy_ns || (!busy && now - busy_at >= spin_ns))
                break;
            yielding = now - start >= spin_ns;
        }
        if (yielding)
            sched_yield();
        else
            convoy__cpu_relax();
    }
}

typedef struct worker_arg {
    convoy_context_t *ctx;
    int index;
    hwloc_bitmap_t cpus; /* where to bind (src/bind.c), owned; NULL: do not bind */
} worker_arg_t;

static void bind_worker(convoy_context_t *ctx, int index, hwloc_const_bitmap_t cpus)
{
    char text[256];
    hwloc_bitmap_list_snprintf(text, sizeof(text), cpus);
    if (hwloc_set_cpubind(ctx->topology, cpus, HWLOC_CPUBIND_THREAD) != 0)
        convoy__log_info("CPU worker %d: binding to PUs %s failed; running unbound", index, text);
    else
        convoy__log_debug("CPU worker %d bound to PUs %s", index, text);
}

static void *worker_main(void *p)
{
    worker_arg_t *arg = p;
    convoy_context_t *ctx = arg->ctx;
    int index = arg->index;
    convoy__thread_mark("a CPU worker");
    convoy__thread_name("cpu%d", index);
    if (arg->cpus != NULL)
        bind_worker(ctx, index, arg->cpus);
    hwloc_bitmap_free(arg->cpus);
    free(arg);
    if (ctx->trace != NULL) {
        char name[32];
        snprintf(name, sizeof(name), "cpu worker %d", index);
        convoy__trace_name(ctx->trace, 0, index, name);
    }
    convoy__task_t *ring[CONVOY__CPU_RING_MAX];
    slot = (cpu_slot_t){.ctx = ctx};
    uint64_t spin_ns = (uint64_t)(convoy__param_double(&ctx->params, "spin_us") * 1000.0);
    uint64_t busy_ns = (uint64_t)(convoy__param_double(&ctx->params, "spin_busy_us") * 1000.0);
    busy_ns = busy_ns > 0 ? CONVOY__MAX(busy_ns, spin_ns) : spin_ns;
    convoy__queue_wait_t *w = &ctx->qwait[0];
    int spinning = 0;
    for (;;) {
        uint64_t seen = convoy__queue_pushes(ctx, 0);
        uint64_t deadline = UINT64_MAX;
        /* An empty queue is not locked: a pop of nothing took the queue's lock from the
         * inserting thread each time a worker came back from its task (overhead's
         * independent tasks on the H200 host: its thread spent 30% in that lock). */
        int n = 0;
        if (ctx->sched->depth(ctx->sched_state, 0) > 0)
            n = ctx->sched->pop(ctx->sched_state, 0, ring, CONVOY__CPU_RING_MAX, convoy__now_ns(),
                                0, &deadline);
        if (n > 0) {
            /* A poller going to work hands its place to a sleeper itself (unless another
             * worker polls): else the next push finds no poller and wakes one on the
             * inserting thread's time (bench/overhead's independent tasks on the H200
             * host: 37400 wake-ups paid by pushes in a run, 2791 since). A busy worker
             * with work left behind it does the same. */
            if (spinning)
                atomic_fetch_sub(&w->spinners, 1);
            if ((spinning || ctx->sched->depth(ctx->sched_state, 0) > 0) && wake_poller(w))
                atomic_fetch_add_explicit(&w->handoffs, 1, memory_order_relaxed);
            spinning = 0;
            slot.runs = 0;
            convoy__host_execute(ctx, index, ring, n);
            while (slot.next != NULL) {
                convoy__task_t *t = slot.next;
                slot.next = NULL;
                slot.runs++;
                convoy__host_execute(ctx, index, &t, 1);
            }
            continue;
        }
        if (atomic_load(&ctx->stopping))
            break;
        /* One worker at a time polls: more only fight over the queue's lock (on 16 cores
         * every worker polling for 20 us made empty tasks cost 8.1 us instead of 4.9).
         * Counted pollers that are only wake-ups on their way do not keep this worker
         * from polling: it is here now, and a sleeper starts tens of us after its wake-up,
         * so the tasks pushed meanwhile would wait for it (mixed_latency's CPU successors
         * did, once pollers handed their place over at each pop). */
        if (!spinning && (spin_ns > 0 || (busy_ns > 0 && accel_busy(ctx)))) {
            int counted = atomic_load(&w->spinners);
            if (counted == atomic_load(&w->watches))
                spinning = atomic_compare_exchange_strong(&w->spinners, &counted, counted + 1);
        }
        if (spinning) {
            queue_spin(ctx, 0, seen, spin_ns, busy_ns);
            if (convoy__queue_pushes(ctx, 0) != seen)
                continue;
            atomic_fetch_sub(&w->spinners, 1);
            spinning = 0;
        }
        if (convoy__queue_pushes(ctx, 0) != seen)
            continue;
        spinning = convoy__queue_sleep(ctx, 0, seen, deadline);
    }
    if (spinning)
        atomic_fetch_sub(&w->spinners, 1);
    convoy__host_worker_exit();
    return NULL;
}

convoy_status_t convoy__workers_start(convoy_context_t *ctx)
{
    /* Within the process's binding (a launcher's, taskset's), not the whole machine. */
    hwloc_topology_t topo = ctx->topology;
    hwloc_bitmap_t procset = convoy__bind_process_set(topo);
    if (procset == NULL)
        return convoy__error(NULL, CONVOY_ERR_NOMEM, "out of host memory for the CPU binding");
    int n = (int)convoy__param_int(&ctx->params, "nthreads");
    if (n == 0)
        n = convoy__bind_core_count(topo, procset);
    int bind = convoy__param_int(&ctx->params, "bind") != 0;
    ctx->workers = convoy__calloc(ctx, (size_t)n, sizeof(pthread_t), "CPU workers");
    if (ctx->workers == NULL) {
        hwloc_bitmap_free(procset);
        return CONVOY_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        worker_arg_t *arg = malloc(sizeof(*arg));
        int rc = arg == NULL ? ENOMEM : 0;
        if (arg != NULL) {
            *arg = (worker_arg_t){.ctx = ctx, .index = i};
            if (bind && (arg->cpus = convoy__bind_worker_set(topo, procset, i)) == NULL)
                rc = ENOMEM;
        }
        if (rc == 0)
            rc = pthread_create(&ctx->workers[i], NULL, worker_main, arg);
        if (rc != 0) {
            if (arg != NULL)
                hwloc_bitmap_free(arg->cpus);
            free(arg);
            hwloc_bitmap_free(procset);
            return convoy__error(NULL, CONVOY_ERR_NOMEM, "could not start CPU worker %d of %d: %s",
                                 i, n, strerror(rc));
        }
        ctx->nworkers++;
    }
    hwloc_bitmap_free(procset);
    return CONVOY_SUCCESS;
}

void convoy__workers_stop(convoy_context_t *ctx)
{
    if (ctx->qwait == NULL)
        return;
    atomic_store(&ctx->stopping, 1);
    convoy__queue_close(ctx, 0);
    for (int i = 0; i < ctx->nworkers; i++)
        pthread_join(ctx->workers[i], NULL);
    ctx->nworkers = 0;
    free(ctx->workers);
    ctx->workers = NULL;
}

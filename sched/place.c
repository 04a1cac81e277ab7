/*
 * Placement of ready tasks (sched.h): where the data are, then where the load is lowest.
 */
#include "config.h"

#include "src/coherence.h"
#include "src/core.h"

/* Has cls a chore for kind? Loaded atomically: convoy_class_set_chore may change it
 * while tasks of the class are placed. */
static int has_chore(const convoy_class_t *cls, convoy_device_kind_t kind)
{
    return __atomic_load_n(&cls->chore[kind], __ATOMIC_ACQUIRE) != NULL ||
           __atomic_load_n(&cls->batch_chore[kind], __ATOMIC_ACQUIRE) != NULL;
}

/* Can accelerator dev run t: a chore for its kind, and room for every flow. */
static int can_run(const convoy__device_t *dev, const convoy__task_t *t, size_t *bytes_p)
{
    const convoy_class_t *cls = t->cls;
    if (!has_chore(cls, dev->kind))
        return 0;
    size_t total = 0;
    for (int f = 0; f < cls->nflows; f++)
        total += t->data[f]->bytes;
    *bytes_p = total;
    return total <= dev->mem_capacity;
}

int convoy__sched_place_locality(void *state, convoy_context_t *ctx, convoy__task_t *t)
{
    (void)state;
    const convoy_class_t *cls = t->cls;
    int runnable[CONVOY__MAX_ACCEL], n = 0, too_big = 0;
    for (int i = 0; i < ctx->naccel; i++) {
        size_t total = 0;
        if (can_run(ctx->accel[i], t, &total))
            runnable[n++] = i;
        else
            too_big |= total > ctx->accel[i]->mem_capacity;
    }
    /* One candidate (one GPU, the common case): where the data are and the loads only rank
     * candidates, and the loads are lines the progress threads write. */
    int best = n == 1 ? runnable[0] + 1 : 0;
    uint64_t best_bytes = 0;
    int64_t best_load = INT64_MAX;
    for (int k = 0; n > 1 && k < n; k++) { /* rank the candidates: more than one */
        int i = runnable[k];
        const convoy__device_t *dev = ctx->accel[i];
        uint64_t here = 0;
        for (int f = 0; f < cls->nflows; f++) {
            const convoy_data_t *d = t->data[f];
            int on = convoy__coh_dirty_on(d);
            if (on == i || (on == CONVOY__COH_HOST && convoy__coh_hint(d) == i))
                here += d->bytes;
        }
        int64_t load = __atomic_load_n(&dev->load, __ATOMIC_RELAXED) +
                       __atomic_load_n(&dev->queued, __ATOMIC_RELAXED);
        if (best == 0 || here > best_bytes || (here == best_bytes && load < best_load)) {
            best = i + 1;
            best_bytes = here;
            best_load = load;
        }
    }
    if (best == 0 && too_big && !has_chore(cls, CONVOY_DEVICE_CPU)) {
        /* Nowhere else to go: the device fails it with a message naming the sizes. */
        for (int i = 0; i < ctx->naccel && best == 0; i++)
            if (has_chore(cls, ctx->accel[i]->kind))
                best = i + 1;
    } else if (best == 0 && too_big) {
        char name[160];
        convoy__log_info("%s: its flows are larger than every accelerator's memory; it runs on "
                         "the CPUs",
                         convoy__task_name(t, name, sizeof(name)));
    }
    return best;
}

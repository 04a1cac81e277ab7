/*
 * Coherence: where the newest version of each datum lives (DESIGN.md, "Data coherence
 * (write-back)"). Internal to convoy.
 *
 * A datum's newest version is either in host memory or, after a device task wrote it,
 * only on that accelerator (dirty there) until something needs it elsewhere. Both facts
 * are one atomic word per datum, (version << 8) | place, so every thread reads a
 * consistent pair without a lock:
 *   - version: the number of successful writes so far;
 *   - place: 0 when the host holds the newest version, 1 + i when only accelerator i
 *     does (its copy is dirty).
 * A device copy holds version v when the pipeline says so (devmem.c); it is valid while
 * v is the datum's version. Older copies become stale without being told.
 *
 * Rule R (what keeps host memory and every copy safe): a task placed anywhere but the
 * accelerator holding its datum's dirty version first waits for a flush of that version
 * home (src/task.c), so a dirty version is only ever read where it lives, and nothing
 * writes host memory while a pushout into it is in flight.
 *
 * Who changes what: the core commits a task's writes at its completion (the place it ran
 * on); the pipeline reports pushouts that landed home. Transitions are compare-and-swap,
 * so a landing of an old version never hides a newer one.
 */
#ifndef CONVOY_COHERENCE_H
#define CONVOY_COHERENCE_H

#include <stdatomic.h>
#include <stdint.h>

#include "convoy.h"

#define CONVOY__COH_HOST (-1) /* the place of the host in the calls below */

/* The datum's newest version. */
uint64_t convoy__coh_version(const convoy_data_t *d);
/* -1 when the host holds the newest version, else the accelerator that alone does. */
int convoy__coh_dirty_on(const convoy_data_t *d);
/* Both at once (a consistent pair). */
void convoy__coh_get(const convoy_data_t *d, uint64_t *version_p, int *dirty_on_p);

/* A task that wrote d on place (CONVOY__COH_HOST or an accelerator index) succeeded:
 * version + 1 is the newest, held there only (or on the host). */
void convoy__coh_commit(convoy_data_t *d, int place);
/* Version v of d landed in host memory from accelerator i: the host holds the newest
 * version again, if v still is the newest. Returns 1 when it did. */
int convoy__coh_landed_home(convoy_data_t *d, uint64_t v, int from);

/* Placement hint: the accelerator that last wrote or staged d, -1 for none. */
int convoy__coh_hint(const convoy_data_t *d);
void convoy__coh_set_hint(convoy_data_t *d, int accel);
/* Forget a hint naming accel (its copy is gone). */
void convoy__coh_clear_hint(convoy_data_t *d, int accel);

/* Writers of d that failed since the last acquire reported them. */
void convoy__coh_write_failed(convoy_data_t *d);
int convoy__coh_take_failed(convoy_data_t *d);

/* Data whose newest version is on an accelerator only, over the context. */
int64_t convoy__coh_dirty_count(const convoy_context_t *ctx);

/* Something reads d's version at home (an acquire, a CPU task, a stage-in elsewhere):
 * a write-behind that brought it there was not for nothing (device/pushout.c). */
void convoy__coh_read_home(convoy_data_t *d);

/*
 * check_host_writes: the host bytes of d are a copy of version v that a device copy now
 * also holds; remember their hash, so that a later change of host memory made without
 * convoy_data_acquire(RW) is found. No-op unless the parameter is on.
 */
void convoy__coh_note_host(convoy_data_t *d, uint64_t v);
/* 1 when check_host_writes is on, the host holds version v of d, a hash was noted for v
 * and the host bytes no longer match it. */
int convoy__coh_host_changed(convoy_data_t *d, uint64_t v);

#endif /* CONVOY_COHERENCE_H */

/*
 * Where convoy's threads run: within the CPUs the process is bound to (by taskset,
 * mpirun --bind-to, srun --cpu-bind, a cgroup), never the whole machine. CPU worker i
 * gets the i-th core of that set (modulo its size); a device's progress thread gets the
 * part of the set near its device. Internal to convoy.
 */
#ifndef CONVOY_BIND_H
#define CONVOY_BIND_H

#include <hwloc.h>

#include "convoy.h"

/* The CPUs the process may run on: its binding (hwloc_get_cpubind) within the allowed
 * set; the allowed set when the binding cannot be read. The caller frees it with
 * hwloc_bitmap_free. NULL without memory. */
hwloc_bitmap_t convoy__bind_process_set(hwloc_topology_t topo);

/* How many cores have a PU in set (at least 1): the CPU workers nthreads=0 starts. */
int convoy__bind_core_count(hwloc_topology_t topo, hwloc_const_bitmap_t set);

/* The PUs of set in its (index mod count)-th core, for CPU worker index. The caller
 * frees it. NULL without memory. */
hwloc_bitmap_t convoy__bind_worker_set(hwloc_topology_t topo, hwloc_const_bitmap_t set, int index);

/* The PUs of the process set that are in near (the device's locality), or the whole
 * process set when near is NULL, empty or disjoint from it. The caller frees it. NULL
 * without memory. */
hwloc_bitmap_t convoy__bind_near_set(hwloc_topology_t topo, hwloc_const_bitmap_t near);

/*
 * Bind the calling thread, a device's progress thread, within the process's CPUs near
 * its device: near is the device's locality (e.g. hwloc_cuda_get_device_cpuset), or NULL
 * when unknown. what names the thread in the log ("cuda0 progress"). Returns
 * CONVOY_SUCCESS, or CONVOY_ERR_NOMEM; a binding the system refuses is logged at 'info'
 * and the thread runs unbound (CONVOY_SUCCESS), as the CPU workers do. For the lead's
 * call from the progress thread's start.
 */
convoy_status_t convoy__bind_progress_thread(convoy_context_t *ctx, hwloc_const_bitmap_t near,
                                             const char *what);

#endif /* CONVOY_BIND_H */

/*
 * Thread placement within the process's CPU binding (see bind.h).
 */
#include "config.h"

#include "src/bind.h"
#include "src/core.h"

hwloc_bitmap_t convoy__bind_process_set(hwloc_topology_t topo)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL)
        return NULL;
    /* Flags 0: the whole process's binding, not one thread's (a program may have pinned
     * its main thread to one core of its share). */
    if (hwloc_get_cpubind(topo, set, 0) != 0 || hwloc_bitmap_iszero(set))
        hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(topo));
    else
        hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
    if (hwloc_bitmap_iszero(set)) /* a binding outside what hwloc may use: take it all */
        hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(topo));
    return set;
}

/* The n-th core with a PU in set, or NULL. */
static hwloc_obj_t nth_core(hwloc_topology_t topo, hwloc_const_bitmap_t set, int n)
{
    hwloc_obj_t core = NULL;
    while ((core = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, core)) != NULL)
        if (hwloc_bitmap_intersects(core->cpuset, set) && n-- == 0)
            return core;
    return NULL;
}

int convoy__bind_core_count(hwloc_topology_t topo, hwloc_const_bitmap_t set)
{
    int n = 0;
    hwloc_obj_t core = NULL;
    while ((core = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, core)) != NULL)
        n += hwloc_bitmap_intersects(core->cpuset, set);
    return n > 0 ? n : 1;
}

hwloc_bitmap_t convoy__bind_worker_set(hwloc_topology_t topo, hwloc_const_bitmap_t set, int index)
{
    hwloc_bitmap_t out = hwloc_bitmap_dup(set);
    if (out == NULL)
        return NULL;
    hwloc_obj_t core = nth_core(topo, set, index % convoy__bind_core_count(topo, set));
    if (core != NULL) /* NULL: a topology without cores; the whole set then */
        hwloc_bitmap_and(out, out, core->cpuset);
    return out;
}

hwloc_bitmap_t convoy__bind_near_set(hwloc_topology_t topo, hwloc_const_bitmap_t near)
{
    hwloc_bitmap_t set = convoy__bind_process_set(topo);
    if (set == NULL || near == NULL || !hwloc_bitmap_intersects(set, near))
        return set;
    hwloc_bitmap_and(set, set, near);
    return set;
}

convoy_status_t convoy__bind_progress_thread(convoy_context_t *ctx, hwloc_const_bitmap_t near,
                                             const char *what)
{
    hwloc_topology_t topo = ctx->topology;
    hwloc_bitmap_t set = convoy__bind_near_set(topo, near);
    if (set == NULL)
        return convoy__error(ctx, CONVOY_ERR_NOMEM, "out of host memory binding %s", what);
    char text[256];
    hwloc_bitmap_list_snprintf(text, sizeof(text), set);
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
        convoy__log_info("%s: binding to PUs %s failed; running unbound", what, text);
    else
        convoy__log_info("%s bound to PUs %s", what, text);
    hwloc_bitmap_free(set);
    return CONVOY_SUCCESS;
}

/*
 * check_bind: CPU threads are placed within the process's binding (src/bind.c,
 * src/worker.c). Under an affinity of one CPU (as `taskset -c 1` or a launcher's
 * --bind-to core gives), nthreads=0 starts one worker and every worker, bound or not,
 * runs within that CPU; with the whole machine, worker i gets core i. The progress-thread
 * helper binds within the process's CPUs near a given locality, or within them all when
 * the locality is unknown or disjoint.
 */
#include "config.h"

#include <dirent.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/bind.h"
#include "src/core.h"
#include "tests/test_util.h"

/* The CPU this test restricts itself to: 1 when the machine has it, else 0. */
static int one_cpu(void)
{
    cpu_set_t all;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(all), &all), 0);
    return CPU_ISSET(1, &all) ? 1 : 0;
}

/* Every thread of the process, as taskset does it: the process's binding is the union
 * of its threads' (a sanitizer's helper thread included). */
static void restrict_to(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            ck_assert_int_eq(sched_setaffinity((pid_t)atoi(e->d_name), sizeof(s), &s), 0);
    closedir(d);
}

/* Assert that every thread of the process may run only on cpu; returns how many. */
static int all_threads_on(int cpu)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        cpu_set_t s;
        ck_assert_int_eq(sched_getaffinity(tid, sizeof(s), &s), 0);
        ck_assert_msg(CPU_COUNT(&s) == 1 && CPU_ISSET(cpu, &s),
                      "thread %d may run on %d CPU(s), not only on CPU %d", (int)tid, CPU_COUNT(&s),
                      cpu);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(workers_within_one_cpu)
{
    /* Proves: restricted to one CPU, nthreads=0 starts one worker (not one per core of
     * the machine), and with bind on or off, and with more workers than cores, every
     * thread convoy starts stays on that CPU. */
    int cpu = one_cpu();
    restrict_to(cpu);
    const char *binds[] = {"1", "0"};
    for (int b = 0; b < 2; b++) {
        convoy_context_t *ctx = tu_init(
            (const char *const[]){"devices", "sim", "sched", "fifo", "bind", binds[b], NULL});
        ck_assert_int_eq(ctx->nworkers, 1);
        ck_assert_int_ge(all_threads_on(cpu), 3); /* this one, the worker, progress */
        convoy_fini(ctx);
    }
    convoy_context_t *ctx =
        tu_init((const char *const[]){"devices", "host", "nthreads", "3", "bind", "1", NULL});
    ck_assert_int_eq(ctx->nworkers, 3);
    ck_assert_int_ge(all_threads_on(cpu), 4);
    convoy_fini(ctx);
}
END_TEST

START_TEST(worker_sets)
{
    /* Proves: over a set, worker i gets the PUs of the set in its i-th core (modulo the
     * cores), the count is the cores the set touches (at least 1), and a single-PU set
     * gives that PU to every worker. */
    hwloc_topology_t topo;
    ck_assert_int_eq(hwloc_topology_init(&topo), 0);
    ck_assert_int_eq(hwloc_topology_load(topo), 0);
    hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(topo);
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    ck_assert_int_eq(convoy__bind_core_count(topo, all), ncores > 0 ? ncores : 1);
    for (int i = 0; i < 2 * ncores; i++) {
        hwloc_bitmap_t w = convoy__bind_worker_set(topo, all, i);
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)(i % ncores));
        ck_assert(hwloc_bitmap_isequal(w, core->cpuset));
        hwloc_bitmap_free(w);
    }
    hwloc_obj_t last = hwloc_get_obj_by_type(
        topo, HWLOC_OBJ_PU, (unsigned)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU) - 1);
    ck_assert_int_eq(convoy__bind_core_count(topo, last->cpuset), 1);
    for (int i = 0; i < 3; i++) {
        hwloc_bitmap_t w = convoy__bind_worker_set(topo, last->cpuset, i);
        ck_assert(hwloc_bitmap_isequal(w, last->cpuset));
        hwloc_bitmap_free(w);
    }
    hwloc_bitmap_t empty = hwloc_bitmap_alloc();
    ck_assert_int_eq(convoy__bind_core_count(topo, empty), 1);
    hwloc_bitmap_free(empty);
    hwloc_topology_destroy(topo);
}
END_TEST

static void *progress_like(void *arg)
{
    convoy_context_t *ctx = arg;
    hwloc_topology_t topo = ctx->topology;
    hwloc_bitmap_t got = hwloc_bitmap_alloc(), proc = convoy__bind_process_set(topo);
    /* Unknown locality: the process's CPUs. */
    ck_assert_int_eq(convoy__bind_progress_thread(ctx, NULL, "test progress"), CONVOY_SUCCESS);
    ck_assert_int_eq(hwloc_get_cpubind(topo, got, HWLOC_CPUBIND_THREAD), 0);
    ck_assert(hwloc_bitmap_isincluded(got, proc));
    /* A locality inside the process's CPUs: exactly it. */
    hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, proc, HWLOC_OBJ_PU, 0);
    ck_assert_int_eq(convoy__bind_progress_thread(ctx, pu->cpuset, "test progress"),
                     CONVOY_SUCCESS);
    ck_assert_int_eq(hwloc_get_cpubind(topo, got, HWLOC_CPUBIND_THREAD), 0);
    ck_assert(hwloc_bitmap_isequal(got, pu->cpuset));
    hwloc_bitmap_t near = convoy__bind_near_set(topo, pu->cpuset);
    ck_assert(hwloc_bitmap_isequal(near, pu->cpuset));
    hwloc_bitmap_free(near);
    /* A locality outside them (a device on the other socket): the process's CPUs. */
    hwloc_bitmap_t outside = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(topo));
    hwloc_bitmap_andnot(outside, outside, proc);
    near = convoy__bind_near_set(topo, hwloc_bitmap_iszero(outside) ? NULL : outside);
    ck_assert(hwloc_bitmap_isequal(near, proc));
    hwloc_bitmap_free(near);
    hwloc_bitmap_free(outside);
    hwloc_bitmap_free(got);
    hwloc_bitmap_free(proc);
    return NULL;
}

START_TEST(progress_binding)
{
    /* Proves: convoy__bind_progress_thread binds the calling thread within the process's
     * CPUs: to the device's locality where they meet, to all of them otherwise. */
    convoy_context_t *ctx =
        tu_init((const char *const[]){"devices", "host", "nthreads", "1", NULL});
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, progress_like, ctx), 0);
    pthread_join(t, NULL);
    convoy_fini(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bind");
    TCase *tc = tu_tcase(s, "bind", 30);
    tcase_add_test(tc, workers_within_one_cpu);
    tcase_add_test(tc, worker_sets);
    tcase_add_test(tc, progress_binding);
    return s;
}

int main(void)
{
    return tu_main(suite());
}

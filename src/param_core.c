/*
 * The core's parameters. Component parameters live with their components.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "src/core.h"
#include "src/param.h"

/* "fifo, batch" or "sim, host": the names of one component list. */
static void names_of(int sched, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; o + 1 < len; i++) {
        const char *name =
            sched ? (convoy__sched_components[i] ? convoy__sched_components[i]->name : NULL)
                  : (convoy__device_components[i] ? convoy__device_components[i]->name : NULL);
        if (name == NULL)
            break;
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i > 0 ? ", " : "", name);
    }
}

/* A scheduler name is checked where it is given (preset, environment, option), so that
 * the error names its source rather than surfacing later in convoy_init. */
static convoy_status_t check_sched(const convoy__param_def_t *def, const char *text)
{
    for (int i = 0; convoy__sched_components[i] != NULL; i++)
        if (strcmp(convoy__sched_components[i]->name, text) == 0)
            return CONVOY_SUCCESS;
    char names[256];
    names_of(1, names, sizeof(names));
    return convoy__error(NULL, CONVOY_ERR_NOT_FOUND,
                         "parameter '%s': value '%s' is not a scheduler; allowed: %s", def->name,
                         text, names);
}

/* The same for the device list, with src/component.c's grammar: auto, empty, or
 * comma-separated names each optionally prefixed by '^'; empty items name nothing. */
static convoy_status_t check_devices(const convoy__param_def_t *def, const char *text)
{
    if (strcmp(text, "auto") == 0)
        return CONVOY_SUCCESS;
    for (const char *p = text; *p != '\0';) {
        size_t len = strcspn(p, ",");
        size_t skip = p[0] == '^';
        int found = len == 0;
        for (int i = 0; !found && convoy__device_components[i] != NULL; i++) {
            const char *name = convoy__device_components[i]->name;
            found = strlen(name) == len - skip && strncmp(name, p + skip, len - skip) == 0;
        }
        if (!found) {
            char names[256];
            names_of(0, names, sizeof(names));
            return convoy__error(NULL, CONVOY_ERR_NOT_FOUND,
                                 "parameter '%s': value '%s' names no device '%.*s'; allowed: "
                                 "auto, or a comma-separated list of %s (a name prefixed by ^ "
                                 "excludes it)",
                                 def->name, text, (int)(len - skip), p + skip, names);
        }
        p += len + (p[len] == ',');
    }
    return CONVOY_SUCCESS;
}

const convoy__param_def_t convoy__core_params[] = {
    {.name = "sched",
     .type = CONVOY__PARAM_STRING,
     .def = "batch",
     .doc = "scheduler component: batch (rings, fused bounded copies; the one to use) or fifo "
            "(one task, one copy per flow: the baseline batch is measured against)",
     .check = check_sched},
    {.name = "devices",
     .type = CONVOY__PARAM_STRING,
     .def = "auto",
     .doc = "devices to use: auto (every GPU; the CPUs alone when there is none), a list "
            "'host,sim,cuda', or '^name' to exclude; the CPUs (host) are always used",
     .check = check_devices},
    {.name = "lanes",
     .type = CONVOY__PARAM_INT,
     .def = "1",
     .min = 1,
     .max = 8,
     .doc = "progress threads per accelerator, each driving a lane of it: an accelerator of "
            "its own to placement and coherence (named cuda0.0, cuda0.1, ...), with its own "
            "streams and events and 1/lanes of the memory convoy may use there. A task goes "
            "to the lane holding most of its bytes, else the least loaded; a datum written on "
            "one lane and read on another moves through host memory, and a GPU's chores run "
            "on several threads at once. On the H200 host tiny_tasks' one progress thread is "
            "its limit: 2 lanes ran it 1.10-1.45x as fast as 1 in the same calls (medians "
            "760k-1018k tasks/s; doc/results.md, 2026-12-02 evening)"},
    {.name = "nthreads",
     .type = CONVOY__PARAM_INT,
     .def = "0",
     .min = 0,
     .max = 1024,
     .doc = "CPU worker threads; 0 means one per core of the CPUs the process is bound to "
            "(taskset, mpirun --bind-to, srun --cpu-bind; hwloc_get_cpubind)"},
    {.name = "bind",
     .type = CONVOY__PARAM_BOOL,
     .def = "1",
     .doc = "bind CPU worker i to the i-th core of the process's CPUs (modulo their number); "
            "0: workers run anywhere within the process's CPUs, the choice where other "
            "programs keep some of them busy (a bound worker waits for its turn there; "
            "doc/guide.md)"},
    {.name = "verbose",
     .type = CONVOY__PARAM_CHOICE,
     .def = "warn",
     .choices = "error|warn|info|debug|trace",
     .doc = "the most detailed log level printed"},
    {.name = "log_prefix",
     .type = CONVOY__PARAM_CHOICE,
     .def = "auto",
     .choices = "auto|on|off",
     .doc = "start each log line with [host:pid]: on, off, or auto (on when a launcher rank "
            "variable is set: OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID)"},
    {.name = "trace",
     .type = CONVOY__PARAM_STRING,
     .def = "",
     .doc = "write a Chrome trace-event JSON file to this path at fini (empty: no trace); %p "
            "is replaced by the pid, %h the host name, %r the launcher rank (0 without one), "
            "%% a %; an existing path must be a regular file (doc/tracing.md)"},
    {.name = "trace_flows",
     .type = CONVOY__PARAM_BOOL,
     .def = "0",
     .doc = "add flow arrows from each task to its successors in the trace"},
    {.name = "copy_method",
     .type = CONVOY__PARAM_CHOICE,
     .def = "auto",
     .choices = "auto|engine|sm|loop",
     .doc = "how multi-copy submissions are carried: auto picks per submission (see "
            "doc/reference.md); engine, sm and loop force one where the device has it"},
    {.name = "pageable_bounce",
     .type = CONVOY__PARAM_CHOICE,
     .def = "auto",
     .choices = "auto|on|off",
     .doc = "copies of pageable host memory (not from convoy_host_alloc) go through pinned "
            "blocks, so that a submission takes the fast pinned path rather than one copy "
            "call per flow: auto does it for copies up to pageable_bounce_max where the "
            "device has pinned memory, on for every size, off never (doc/cuda.md)"},
    {.name = "pageable_bounce_max",
     .type = CONVOY__PARAM_SIZE,
     .def = "64K",
     .min = 1,
     .max = 1099511627776.0,
     .doc = "auto bounces pageable copies up to this size; larger ones go straight (PHYSICS.md "
            "s2: one call per 8 KiB pageable copy moves 1-2.5 GB/s against 45 pinned; "
            "to be set by the bounce/direct crossover measured on the H200)"},
    {.name = "pageable_bounce_limit",
     .type = CONVOY__PARAM_SIZE,
     .def = "64M",
     .min = 4096,
     .max = 1099511627776.0,
     .doc = "bytes of pinned bounce blocks a device holds at once (shared evenly by its "
            "lanes); a submission that would pass it goes straight"},
    {.name = "pageable_bounce_threads",
     .type = CONVOY__PARAM_INT,
     .def = "-1",
     .min = -1,
     .max = 64,
     .doc = "helper threads per accelerator (per lane with lanes > 1) that share the bounce's "
            "memcpy of a submission "
            "(256 KiB or more) with its progress thread; they poll spin_us after a job, and "
            "up to spin_busy_us from the start of a ring after one whose bounce they shared "
            "(doc/cuda.md); 0: the progress thread alone; -1: half the process's cores "
            "shared among the accelerators, less one, at most 7 (7 with one GPU on the "
            "16-core H200 host, where 8 threads copy 45 GB/s and 4 22.6: doc/results.md)"},
    {.name = "max_inflight",
     .type = CONVOY__PARAM_INT,
     .def = "1024",
     .min = 1,
     .max = 1 << 20,
     .doc = "tasks in flight per accelerator (taken from the scheduler and not yet complete): "
            "stage-in of the next rings overlaps execution of the last"},
    {.name = "device_memory",
     .type = CONVOY__PARAM_SIZE,
     .def = "0",
     .min = 0,
     .max = 1125899906842624.0, /* 1P */
     .doc = "bytes of memory convoy may use on each device (0: what the device offers), "
            "shared evenly by its lanes; small values exercise eviction (bench/evict)"},
    {.name = "device_cache",
     .type = CONVOY__PARAM_SIZE,
     .def = "1G",
     .min = 0,
     .max = 1125899906842624.0, /* 1P */
     .doc = "bytes (as the flows ask them) of freed device buffers of up to 1 MiB each "
            "device keeps by size for the next copy of that size (shared evenly by its "
            "lanes); at most a quarter of what convoy may use there (device_memory), given back "
            "when an allocation finds "
            "the device full, and at convoy_fini; 0: none. On the H200 host a new copy's "
            "allocation through the device pool took 520-620 TSC cycles, half of its "
            "reserve (doc/results.md, 2026-12-01)"},
    {.name = "in_place_max_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "64K",
     .min = 0,
     .max = 1125899906842624.0, /* 1P */
     .doc = "classes with CONVOY_CLASS_INPUTS_IN_PLACE: the largest input an accelerator's "
            "chore reads in place in convoy_host_alloc memory (CUDA and sim) instead of a "
            "stage-in copy; 0: none. PHYSICS.md s1: a kernel reading mapped pinned memory "
            "with 16-byte loads moved 45-51 GB/s for 8-64 KiB chunks"},
    {.name = "write_behind",
     .type = CONVOY__PARAM_SIZE,
     .def = "0",
     .min = 0,
     .max = 1125899906842624.0, /* 1P */
     .doc = "a task's outputs start home as it completes, if nothing depends on it yet (each "
            "datum of 4 KiB or more it wrote without reading and no later task writes; the "
            "device keeps its copy), while the device's pushouts home in flight stay within "
            "this many bytes (shared evenly by its lanes; an output larger than a lane's "
            "share is never written behind); a lane stops until the next wait when its tasks "
            "overwrite more than a quarter of what it wrote behind; 0: outputs wait until "
            "something needs them on the host. For programs that insert tasks and then wait "
            "for their outputs: on the H200, tiny_tasks 8 KiB's medians moved -1% to +30% "
            "with 16M; buffers overwritten step after step (chains --ping-pong) moved "
            "1.2-2.1x their final bytes home and ran 2-38% slower, hence off by default "
            "(doc/results.md, 2026-12-03)"},
    {.name = "fault_drop_rings",
     .type = CONVOY__PARAM_INT,
     .def = "0",
     .min = 0,
     .max = 2147483647,
     .doc = "fault injection: each accelerator's first n rings of drops (the device frees "
            "that convoy_data_free leaves behind it) find no host memory for their ring "
            "state, as under memory pressure; their copies are freed all the same "
            "(tests/check_pipeline_faults); 0: off"},
    {.name = "check_host_writes",
     .type = CONVOY__PARAM_BOOL,
     .def = "0",
     .doc = "find host memory changed without convoy_data_acquire(RW) while a device holds a "
            "copy: the task that would read the old copy fails, naming the datum (hashes the "
            "host bytes at every copy: for debugging)"},
    {.name = "cpu_write_backup",
     .type = CONVOY__PARAM_BOOL,
     .def = "1",
     .doc = "save the host bytes a CPU task may write and restore them if its chore fails, so "
            "a failed task leaves the newest valid version (one memcpy per written flow; 0: "
            "a failed CPU chore leaves what it wrote)"},
    {.name = "spin_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "20",
     .min = 0,
     .max = 1000000,
     .doc = "how long an idle CPU worker polls for new tasks before it sleeps (one worker "
            "polls at a time; 0: sleep at once, unless an accelerator is busy: "
            "spin_busy_us). On the 16-core H200 host, bench/overhead "
            "with 16 workers: 5.3 us a task at 0, 2.8-2.9 at 5 and 20, chained 3.5 at 0 and "
            "2.8 at 20 (doc/results.md, 2026-12-01)"},
    {.name = "spin_busy_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "1000",
     .min = 0,
     .max = 1000000,
     .doc = "how long the polling CPU worker polls before it sleeps while tasks are in "
            "flight on an accelerator, whose completions may make CPU tasks ready: on the "
            "H200 host a sleeping worker starts 37-61 us (p10-p50) after its wake-up "
            "(mixed_latency's trace, doc/results.md, 2026-12-01). When above spin_us, an "
            "accelerator that goes busy while every worker sleeps wakes one to poll, and the "
            "poller stays until every accelerator has been idle for spin_us: a core polls "
            "for up to this long per busy period even when no CPU task follows (0: never). "
            "Never less than spin_us; one worker polls at a time, yielding its core past "
            "spin_us"},
    {.name = "poll_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "20",
     .min = 0,
     .max = 100000,
     .doc = "how long a progress thread sleeps between polls of a device without an idle "
            "wait of its own"},
    {.name = "progress_spin_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "1000",
     .min = 0,
     .max = 100000,
     .doc = "while work is in flight on a GPU, how long its progress thread polls without "
            "sleeping after the last thing that moved (then it sleeps poll_us at a time; 0: "
            "sleep at once). mixed_latency's baseline p50 on the H200: 406, 379 and 315 us "
            "at 0, 100 and 1000 (doc/results.md, 2026-12-01). Devices with a wait of their "
            "own (sim) do not poll"},
    {.name = "progress_idle_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "300",
     .min = 0,
     .max = 1000000,
     .doc = "with nothing in flight on a device, how long its progress thread polls its "
            "queue before it sleeps until the next insertion (0: sleep at once): a core "
            "polls this long after each busy period, yielding at each poll. A sleeping "
            "thread's wake-up delays "
            "the first ring after a pause: mixed_latency's baseline p50 on the H200, 200 "
            "rounds, 78.0 and 70.8 us at 0, 69.7 and 69.9 at 300 (doc/results.md, "
            "2026-12-04, night)"},
    {.name = "progress_profile",
     .type = CONVOY__PARAM_BOOL,
     .def = "0",
     .doc = "each accelerator's progress thread times its own work (pushouts, rings, starts, "
            "pops, waits on the device) and prints the split to stderr at the end of each busy "
            "period (when nothing is left in flight), each part's time and share of the period "
            "(doc/tracing.md): where the host time per ring goes, on machines without a "
            "profiler"},
    {.name = "dist_fuse",
     .type = CONVOY__PARAM_BOOL,
     .def = "1",
     .doc = "distributed mode (doc/dist.md): fuse small flows bound for one rank into one "
            "message; 0: one message per flow"},
    {.name = "dist_fuse_max_flows",
     .type = CONVOY__PARAM_INT,
     .def = "256",
     .min = 1,
     .max = 65536,
     .doc = "distributed mode: the most flows in one fused message"},
    {.name = "dist_fuse_max_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "256K",
     .min = 1024,
     .max = 1073741824.0,
     .doc = "distributed mode: the most payload bytes in one fused message"},
    {.name = "dist_large_bytes",
     .type = CONVOY__PARAM_SIZE,
     .def = "64K",
     .min = 0,
     .max = 1125899906842624.0,
     .doc = "distributed mode: a flow over this many bytes travels in a message of its own, so "
            "small flows never wait behind it"},
    {.name = "dist_fuse_wait_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "50",
     .min = 0,
     .max = 10000000,
     .doc = "distributed mode: how long a message that is not full waits for more flows "
            "(while a convoy_dist_wait runs it leaves once the rank has nothing left to pack)"},
    {0},
};

/*
 * The core's parameters. Component parameters live with their components.
 */
#include "config.h"

#include "src/param.h"

const convoy__param_def_t convoy__core_params[] = {
    {.name = "sched",
     .type = CONVOY__PARAM_STRING,
     .def = "batch",
     .doc = "scheduler component: batch (rings, fused bounded copies; the one to use) or fifo "
            "(one task, one copy per flow: the baseline batch is measured against)"},
    {.name = "devices",
     .type = CONVOY__PARAM_STRING,
     .def = "auto",
     .doc = "devices to use: auto (GPUs if any, else sim), a list 'host,sim,cuda', or "
            "'^name' to exclude; the CPUs (host) are always used"},
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
            "0: workers run anywhere within the process's CPUs"},
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
    {.name = "max_inflight",
     .type = CONVOY__PARAM_INT,
     .def = "1024",
     .min = 1,
     .max = 1 << 20,
     .doc = "tasks in flight per accelerator (taken from the scheduler and not yet complete): "
            "stage-in of the next rings overlaps execution of the last"},
    {.name = "spin_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "0",
     .min = 0,
     .max = 100000,
     .doc = "how long an idle CPU worker polls for new tasks before it sleeps; 0: sleep at once "
            "(on 16 cores polling for 20 us made bench/overhead slower, 8.1 vs 4.9 us a task, "
            "doc/results.md)"},
    {.name = "poll_us",
     .type = CONVOY__PARAM_DOUBLE,
     .def = "20",
     .min = 0,
     .max = 100000,
     .doc = "how long a progress thread sleeps between polls of a device without an idle "
            "wait of its own"},
    {0},
};

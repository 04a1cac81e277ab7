/*
 * The sim device's parameters (device/sim/device_sim.c reads them at open): its memory,
 * the cost model that stands for a GPU's link and launches, and the fault injection the
 * tests drive the pipeline's failure paths with. Each row is in doc/reference.md.
 */
#include "config.h"

#define CONVOY__SIM_INTERNAL 1
#include "device/sim/sim.h"

/* One entry a line or two, easier to scan than clang-format's field-per-line layout. */
/* clang-format off */
const convoy__param_def_t convoy__sim_params[] = {
    {.name = "sim_count", .type = CONVOY__PARAM_INT, .def = "1", .min = 0, .max = 16,
     .doc = "sim devices to open (0: none); each models one H200 of PHYSICS.md"},
    {.name = "sim_memory", .type = CONVOY__PARAM_SIZE, .def = "1G", .min = 4096,
     .max = 1125899906842624.0,
     .doc = "device memory per sim device (host memory); small values exercise eviction"},
    {.name = "sim_submit_us", .type = CONVOY__PARAM_DOUBLE, .def = "4.0", .min = 0, .max = 1e6,
     .doc = "us per batched (engine) submission; fits PHYSICS.md s1: 8 KiB x9 batched 5-6 GB/s"},
    {.name = "sim_copy_us", .type = CONVOY__PARAM_DOUBLE, .def = "0.6", .min = 0, .max = 1e6,
     .doc = "us per copy inside a batched submission; PHYSICS.md s1: 8 KiB x128 at 7.5-12.7 GB/s"},
    {.name = "sim_single_copy_us", .type = CONVOY__PARAM_DOUBLE, .def = "2.5", .min = 0,
     .max = 1e6,
     .doc = "us per copy submitted alone (memcpy, loop); PHYSICS.md s1: 8 KiB copies one call "
            "each move 2.7-3.1 GB/s, i.e. ~2.5 us per call on top of the link time"},
    {.name = "sim_bandwidth_gbs", .type = CONVOY__PARAM_DOUBLE, .def = "54", .min = 0.001,
     .max = 1e6,
     .doc = "link GB/s per direction, shared by a device's streams; PHYSICS.md s1: 54-55 GB/s"},
    {.name = "sim_pageable_us", .type = CONVOY__PARAM_DOUBLE, .def = "2.0", .min = 0, .max = 1e6,
     .doc = "us added per copy whose host side is not pinned (not convoy_host_alloc memory); "
            "PHYSICS.md s2: 8 KiB pageable copies move 2.5-3.7 GB/s host-to-device, 0.2-1.0 "
            "device-to-host, against 8-13 pinned and batched"},
    CONVOY__HOSTSLAB_PARAM("sim_host_slab"),
    {.name = "sim_launch_us", .type = CONVOY__PARAM_DOUBLE, .def = "3.0", .min = 0, .max = 1e6,
     .doc = "us per launch, plus the chore's own run time; PHYSICS.md s4: per-launch cost"},
    {.name = "sim_fail_submission", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: the n-th copy submission (memcpy or memcpy_multi) fails "
            "(sim_fail_submissions of them in a row); 0: off"},
    {.name = "sim_fail_submissions", .type = CONVOY__PARAM_INT, .def = "1", .min = 1,
     .max = 2147483647.0,
     .doc = "how many copy submissions fail in a row from sim_fail_submission (a failed "
            "memcpy_multi's retries one copy at a time among them)"},
    {.name = "sim_fail_submitted", .type = CONVOY__PARAM_INT, .def = "-1", .min = -1,
     .max = 2147483647.0,
     .doc = "copies an injected memcpy_multi failure enqueues; -1: 0 for engine, n/2 for loop"},
    {.name = "sim_fail_alloc", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: the n-th mem_alloc fails with CONVOY_ERR_DEVICE; 0: off"},
    {.name = "sim_fail_launch", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: the n-th launch fails and its chore does not run; 0: off"},
    {.name = "sim_fail_record", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: event records fail from the n-th on (sim_fail_records of them); 0: off"},
    {.name = "sim_fail_records", .type = CONVOY__PARAM_INT, .def = "1", .min = 1,
     .max = 2147483647.0,
     .doc = "how many event records fail in a row from sim_fail_record"},
    {.name = "sim_fail_stream_wait", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: stream waits for an event fail from the n-th on "
            "(sim_fail_stream_waits of them); 0: off"},
    {.name = "sim_fail_stream_waits", .type = CONVOY__PARAM_INT, .def = "1", .min = 1,
     .max = 2147483647.0,
     .doc = "how many stream waits fail in a row from sim_fail_stream_wait"},
    {.name = "sim_fail_sync", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: the n-th stream_sync (waiting for a stream when no event can be "
            "recorded) fails; 0: off"},
    {.name = "sim_delay_us", .type = CONVOY__PARAM_DOUBLE, .def = "0", .min = 0, .max = 1e9,
     .doc = "fault injection: us added to the completion of every copy submission"},
    {.name = "sim_launch_inline", .type = CONVOY__PARAM_INT, .def = "0", .min = 0, .max = 1,
     .doc = "1: a launch waits for its stream's earlier work, then runs the chore at once on "
            "the calling thread, as a GPU's launch enqueues its kernels (launch_inline: the "
            "chore's result is known when the launch returns, and the pipeline may push a "
            "task's outputs home behind its launch); 0: the chore runs later on the stream's "
            "thread"},
    {.name = "sim_sticky_errors", .type = CONVOY__PARAM_INT, .def = "0", .min = 0, .max = 2,
     .doc = "1: a copy that fails when it runs ends the device's context, as a fault ends "
            "a GPU's: no later copy or chore runs, and every event completed after it fails "
            "(the device then has errors_sticky, and records quiet events, whose queries the "
            "counters count); 2: as 1, and every call after the fault fails too (copies, "
            "launches, records, stream waits, syncs, allocations), as each CUDA call returns "
            "the fault that ended its context; 0: only the next event of its stream reports "
            "it"},
    {.name = "sim_launch_late_us", .type = CONVOY__PARAM_DOUBLE, .def = "0", .min = 0,
     .max = 1e9,
     .doc = "fault injection: real us a stream waits before each launch's chore starts, as a "
            "GPU whose kernels start late (with sim_launch_inline, before the launch's place "
            "on the stream is over: the chore has run, its event and the stream's later "
            "work come late); 0: off"},
    {.name = "sim_fail_async", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: the n-th copy submission is accepted but fails when it runs: "
            "nothing is copied and the next event recorded on its stream reports it; 0: off"},
    {.name = "sim_fail_async_home", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection: as sim_fail_async, counting only the submissions that copy "
            "device to host (pushouts home); 0: off"},
    {.name = "sim_fail_every", .type = CONVOY__PARAM_INT, .def = "0", .min = 0,
     .max = 2147483647.0,
     .doc = "fault injection for stress tests: every k-th copy submission fails; 0: off"},
    {0},
};
/* clang-format on */

#!/bin/sh
# Proves that every host allocation convoy makes in convoy_init, a small task graph (on
# the CPUs and on the sim device, fifo and batch, with a trace written or not) and
# convoy_fini can fail in turn, and every one from the n-th on, without a crash, an
# abort, a hang, a lost update or a leak, each call returning success or
# CONVOY_ERR_NOMEM (tests/failalloc_run.c says how).
# Skipped (77) in sanitizer builds: ASan and TSan intercept malloc, so the preloaded
# wrapper (tests/failalloc.c) would not see convoy's allocations.
#   tests/failalloc.sh [failalloc_run options]   e.g. --devices sim --all
set -u
run=${FAILALLOC_RUN:-tests/failalloc_run}
so=${FAILALLOC_SO:-tests/.libs/failalloc.so}
"$run" --check-build || exit 77
if [ ! -f "$so" ]; then
    echo "failalloc.sh: $so is not built"
    exit 99
fi
case $so in /*) ;; *) so=$PWD/$so ;; esac
if [ $# -gt 0 ]; then
    LD_PRELOAD=$so exec "$run" "$@"
fi
status=0
for sched in fifo batch; do
    LD_PRELOAD=$so "$run" --devices host --sched "$sched" || status=1
done
LD_PRELOAD=$so "$run" --devices host --sched fifo --all || status=1
LD_PRELOAD=$so "$run" --devices host --sched batch --trace || status=1
# The accelerator pipeline over the sim device: stage-in, rings, launches, pushouts
# home and the flushes of the wait and of acquire (about 400 allocations with fifo).
for sched in fifo batch; do
    LD_PRELOAD=$so "$run" --devices sim --sched "$sched" || status=1
done
LD_PRELOAD=$so "$run" --devices sim --sched fifo --all || status=1
LD_PRELOAD=$so "$run" --devices sim --sched batch --all --trace || status=1
# hwloc's first allocation (in hwloc_topology_init) failing is CONVOY_ERR_NOMEM too;
# hwloc itself does not survive every later one, so only that one is failed.
CONVOY_TEST_FAIL_ALLOC_SCOPE=libhwloc LD_PRELOAD=$so "$run" --only 1 || status=1
exit $status

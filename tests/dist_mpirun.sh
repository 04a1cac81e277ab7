#!/bin/sh
# The distributed mode's programs under mpirun, on 2 ranks and on 4 (oversubscribed: this
# runs on 2 cores): tests/check_dist (random graphs against an oracle) and
# tests/check_dist_fuse (exact message counts, failures across ranks, bad calls); then
# small runs of bench/dist_tiny (fused and not) and bench/stencil, which check their
# results against the formula and a sequential run; and a traced dist_tiny, whose traces
# must hold as many messages as its stats count.
# Skipped (77) in a build without MPI or without mpirun.
dir=tests # the build folder's, where make check runs
mpiexec=${MPIEXEC:-}
if [ -z "$mpiexec" ] || [ ! -x "$dir/check_dist" ] || [ ! -x "$dir/check_dist_fuse" ]; then
    echo "check_dist: no MPI in this build (or no mpirun): skipped"
    exit 77
fi
# Open MPI refuses root unless told; CI runs as root.
root=
if [ "$(id -u)" -eq 0 ]; then
    root=--allow-run-as-root
fi
# Quiet, and no interconnect probing on one host.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
# Under AddressSanitizer: Open MPI leaks at MPI_Finalize (its components' allocations,
# reported with frames in unloaded modules), so leaks do not fail the run by
# themselves; a leak whose stack names convoy's code does (checked below).
rm -f tests/dist_lsan.*
# Under ThreadSanitizer: what Open MPI's own code does is suppressed (tests/dist_tsan.supp).
export TSAN_OPTIONS="${TSAN_OPTIONS:-} suppressions=${srcdir:-.}/tests/dist_tsan.supp"
export LSAN_OPTIONS="exitcode=0:log_path=tests/dist_lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
for np in 2 4; do
    for prog in check_dist_fuse check_dist; do
        echo "--- mpirun -np $np $prog"
        timeout 300 "$mpiexec" $root --oversubscribe -np $np "$dir/$prog" || {
            echo "check_dist: $prog on $np ranks failed"
            exit 1
        }
    done
done
for run in "2 bench/dist_tiny --tasks 64 --rounds 3" \
    "2 bench/dist_tiny --tasks 64 --rounds 3 --convoy-dist-fuse=0" \
    "4 bench/stencil --n 64 --tiles 4 --iters 6" "2 bench/stencil --n 60 --tiles 3 --iters 5"; do
    set -- $run
    np=$1
    shift
    [ -x "$1" ] || continue
    echo "--- mpirun -np $np $*"
    timeout 300 "$mpiexec" $root --oversubscribe -np "$np" "$@" | tail -1 | grep 'verified=1' || {
        echo "check_dist: $* on $np ranks failed"
        exit 1
    }
done
# Messages in the trace: a traced 2-rank dist_tiny's per-rank traces (trace=...%r...) hold,
# summed, as many send and as many receive events as its ranks' convoy_get_stats count
# (the messages= it prints), as convoy-trace summary reads them, and so does their merge.
if [ -x bench/dist_tiny ] && [ -x tools/convoy-trace ]; then
    echo "--- mpirun -np 2 bench/dist_tiny traced"
    rm -f tests/dist_trace.*.json
    line=$(timeout 300 "$mpiexec" $root --oversubscribe -np 2 bench/dist_tiny --tasks 64 \
        --rounds 3 --convoy-trace=tests/dist_trace.%r.json | tail -1)
    want=$(echo "$line" | sed -n 's/.* messages=\([0-9]*\) .*/\1/p')
    for way in sent received; do
        got=0
        for r in 0 1; do
            n=$(tools/convoy-trace summary tests/dist_trace.$r.json |
                sed -n "s/^ *messages $way  *\([0-9]*\)$/\1/p")
            got=$((got + ${n:-0}))
        done
        if [ -z "$want" ] || [ "$want" -eq 0 ] || [ "$got" -ne "$want" ]; then
            echo "check_dist: the traces hold $got messages $way, the stats count ${want:-?} ($line)"
            exit 1
        fi
    done
    echo "traces: $want messages sent and received, as the stats count"
    # Merged into one file, they count the same.
    tools/convoy-trace merge tests/dist_trace.0.json tests/dist_trace.1.json \
        -o tests/dist_trace.all.json || exit 1
    got=$(tools/convoy-trace summary tests/dist_trace.all.json |
        sed -n 's/^ *messages received  *\([0-9]*\)$/\1/p')
    if [ "${got:-0}" -ne "$want" ]; then
        echo "check_dist: the merged trace holds ${got:-0} messages received, not $want"
        exit 1
    fi
    rm -f tests/dist_trace.*.json
fi
for f in tests/dist_lsan.*; do
    [ -e "$f" ] || continue
    # Allocated by convoy's own code: the frame above the allocator is one of its files
    # (the library, dist/, the test programs); MPI's leaks are allocated inside MPI.
    if grep -Eq '^ +#1 .*(src|dist|sched|device|tests)/[a-z_]+\.c:' "$f"; then
        echo "check_dist: a leak in convoy's code ($f):"
        cat "$f"
        exit 1
    fi
done
rm -f tests/dist_lsan.*

#!/bin/bash
# The H200 calls of 2026-12-01 evening (doc/results.md): the CPU workers' watch and slot,
# and batch_idle_close, against the afternoon's tree. Builds .dev/convoy-base.tar.gz and
# .dev/convoy-new.tar.gz, then runs base and new alternating with CONVOY_DEVICES=cuda:
# bench/overhead, mixed_latency (new also with batch_idle_close 0), tiny_tasks (with and
# without a trace; with the progress profile), chains; and a traced mixed_latency whose
# trace comes back in $OUT. Logs under $OUT; a table last.
#   bench/h200_wake.sh        all of it
#   bench/h200_wake.sh tiny   tiny_tasks only: 4 runs each, base and new alternating, then
#                             one each with progress_profile=1
#   bench/h200_wake.sh bounce tiny_tasks on malloc'd memory with 0, 3, 7, 15 bounce
#                             helper threads, beside pinned memory (new tree only)
#   bench/h200_wake.sh ab     tiny_tasks 8 times each: base, new, new with batch_idle_close,
#                             spin_busy_us and batch_drop_wait_us at their old behaviour
#   bench/h200_wake.sh final  the new tree's tests/gpu_copy and gpu_tasks, then more
#                             repetitions of each, for medians: tiny_tasks, traced and
#                             not, 1 KiB, malloc'd memory, overhead, mixed_latency, chains;
#                             a traced mixed_latency; host_costs
set -u
phase=${1:-all}
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=/tmp/wake
. "$(dirname "$0")/h200_build.sh"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } >"$out/machine.txt" 2>&1
[ "$phase" = bounce ] || h200_build base .dev/convoy-base.tar.gz "$w" &
h200_build new .dev/convoy-new.tar.gz "$w" & wait
BASE=$(echo $w/base/convoy-*); NEW=$(echo $w/new/convoy-*)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
run() { echo "### $*" >>"$b"; timeout 60 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
if [ "$phase" = final ]; then
    (cd "$NEW" && timeout 280 make -j16 check TESTS="tests/gpu_copy tests/gpu_tasks" >"$out/check.log" 2>&1; echo "gpu tests rc=$?")
    grep -h -E "[0-9]+ passed" "$NEW"/tests/gpu_*.log | tail -3; cat "$NEW"/tests/gpu_*.log > "$out/gpu-tests.log" 2>/dev/null
    for i in 1 2 3 4 5; do run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
    for i in 1 2 3; do run env CONVOY_TRACE=/tmp/t.json $NEW/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
    for i in 1 2; do run $BASE/bench/tiny_tasks --flow-bytes 1024; run $NEW/bench/tiny_tasks --flow-bytes 1024; done
    for i in 1 2; do run $NEW/bench/tiny_tasks --host-memory malloc; run $NEW/bench/tiny_tasks --host-memory pinned; done
    for i in 1 2 3; do run $BASE/bench/overhead; run $NEW/bench/overhead; done
    for i in 1 2 3; do run $BASE/bench/mixed_latency; run $NEW/bench/mixed_latency; done
    for i in 1 2; do run $BASE/bench/chains; run $NEW/bench/chains; done
    run env CONVOY_TRACE=$out/ml.json $NEW/bench/mixed_latency --rounds 5
    run $NEW/bench/tiny_tasks --convoy-progress_profile=1
    run $NEW/bench/host_costs
elif [ "$phase" = bounce ]; then
    for i in 1 2; do
        run $NEW/bench/tiny_tasks --host-memory pinned
        for t in 0 3 7 15; do run $NEW/bench/tiny_tasks --host-memory malloc --convoy-pageable_bounce_threads=$t; done
    done
elif [ "$phase" = ab ]; then
    # tiny_tasks, base / new / new with this evening's knobs at their old behaviour
    old="--convoy-batch_idle_close=0 --convoy-spin_busy_us=20 --convoy-batch_drop_wait_us=0"
    for i in 1 2 3 4 5 6 7 8; do
        run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; run $NEW/bench/tiny_tasks $old
    done
elif [ "$phase" = tiny ]; then
    for i in 1 2 3 4; do run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
    run $BASE/bench/tiny_tasks --convoy-progress_profile=1
    run $NEW/bench/tiny_tasks --convoy-progress_profile=1
    run $NEW/bench/tiny_tasks --flow-bytes 1024
else
for i in 1 2; do run $BASE/bench/overhead; run $NEW/bench/overhead; done
for i in 1 2; do run $BASE/bench/mixed_latency; run $NEW/bench/mixed_latency; done
run $NEW/bench/mixed_latency --convoy-batch_idle_close=0
run $NEW/bench/mixed_latency --convoy-spin_busy_us=20
run $NEW/bench/mixed_latency
for i in 1 2 3; do run $BASE/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
run $NEW/bench/tiny_tasks --convoy-batch_idle_close=0
run $NEW/bench/tiny_tasks --convoy-batch_drop_wait_us=0
run $BASE/bench/tiny_tasks --convoy-progress_profile=1
run $NEW/bench/tiny_tasks --convoy-progress_profile=1
[ -x $NEW/bench/host_costs ] && run $NEW/bench/host_costs
for i in 1 2; do run env CONVOY_TRACE=/tmp/t.json $NEW/bench/tiny_tasks; run $NEW/bench/tiny_tasks; done
run $BASE/bench/chains; run $NEW/bench/chains
run env CONVOY_TRACE=$out/ml.json $NEW/bench/mixed_latency --rounds 5
fi
grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
grep -h "progress_profile" "$b" | cut -c1-600
awk '/^### /{tag=($0 ~ /\/base\//) ? "BASE" : "NEW"; opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^(tiny_tasks|chains|overhead|mixed_latency) /{print tag, "[" opt "]", $0}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|final_bytes|d2d_copies|small|large_bytes|rounds|sched|host_memory|flow_bytes|tasks|split)=[^ ]*//g' | cut -c1-250

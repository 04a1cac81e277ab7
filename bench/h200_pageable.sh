#!/bin/bash
# One H200 call for the pinned bounce and the SM copy method (doc/results.md): builds
# .dev/convoy-base.tar.gz and .dev/convoy-new.tar.gz (make dist of each), runs the new
# tree's GPU tests unless GPU_TESTS=0, then base and new alternating with
# CONVOY_DEVICES=cuda: tiny_tasks on malloc'd host memory (3 and 7 bounce helpers) and on
# pinned memory, ROUNDS (default 4) turns; the new tree's progress profile of each; then
# bench/host_costs (its memcpy rate by threads) and bench/copy_paths --only-8k of each
# tree twice (COPY_PATHS=0: not). Logs under $OUT; a table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=/tmp/ab
rounds=${ROUNDS:-4}
. "$(dirname "$0")/h200_build.sh"
h200_ab_setup "$w"
for i in $(seq "$rounds"); do
    for t in $BASE $NEW; do
        h200_run $t/bench/tiny_tasks --host-memory malloc
        h200_run $t/bench/tiny_tasks --host-memory malloc --convoy-pageable_bounce_threads=7
        h200_run $t/bench/tiny_tasks --host-memory pinned
    done
done
for m in "malloc" "malloc --convoy-pageable_bounce_threads=7" "pinned"; do
    h200_run $NEW/bench/tiny_tasks --convoy-progress_profile=1 --host-memory $m
done
h200_run $NEW/bench/host_costs
if [ "${COPY_PATHS:-1}" != 0 ]; then
    for i in 1 2; do h200_run $BASE/bench/copy_paths --only-8k; h200_run $NEW/bench/copy_paths --only-8k; done
fi
grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
awk '/^### /{tag=($0 ~ /\/base\//) ? "BASE" : "NEW"; opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^tiny_tasks /{print tag, "[" opt "]", $0} /progress_profile:/{print tag, substr($0, 1, 400)} /^host_costs /{print} /^# copy_paths host calls/{print tag, $0} /^copy_paths .*mem=pinned method=(sm|auto)/{print tag, $0}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|d2d_copies|tasks|page_faults|seconds|raw_loop_gbs|raw_batch_gbs|verified)=[^ ]*//g' | cut -c1-250

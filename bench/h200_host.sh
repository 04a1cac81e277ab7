#!/bin/bash
# One H200 call for issue 10's host cost (doc/results.md, 2026-12-01): builds a base
# tarball (.dev/convoy-base.tar.gz) and the new one (.dev/convoy-new.tar.gz), then runs
# bench/overhead, tiny_tasks, chains and mixed_latency, base and new alternating, and the
# new build once more with progress_profile=1. Logs under $OUT; a short table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
top=$PWD
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -n 2; nproc; } >"$out/machine.txt" 2>&1
. "$(dirname "$0")/h200_build.sh"
build() { h200_build "$1" "$2" /tmp "${@:3}"; }
build base .dev/convoy-base.tar.gz & build new .dev/convoy-new.tar.gz & wait
BASE=$(echo /tmp/base/convoy-*); NEW=$(echo /tmp/new/convoy-*)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
run() { echo "### $*" >>"$b"; timeout 100 "$@" >>"$b" 2>&1; echo "rc=$?" >>"$b"; }
for i in 1 2; do
    run $BASE/bench/overhead
    run $NEW/bench/overhead
    run $NEW/bench/overhead --convoy-spin_us=20
done
run $NEW/bench/overhead --convoy-spin_us=100
run $NEW/bench/overhead --convoy-nthreads=4
run $NEW/bench/overhead --convoy-nthreads=4 --convoy-spin_us=20
for i in 1 2 3; do
    run $BASE/bench/tiny_tasks
    run $NEW/bench/tiny_tasks
done
run $NEW/bench/tiny_tasks --convoy-progress_profile=1
run $BASE/bench/tiny_tasks --flow-bytes 1024
run $NEW/bench/tiny_tasks --flow-bytes 1024
run $NEW/bench/tiny_tasks --flow-bytes 1024 --convoy-progress_profile=1
run $NEW/bench/tiny_tasks --tasks 65536
run $NEW/bench/chains
run $NEW/bench/chains --convoy-progress_profile=1
run $BASE/bench/mixed_latency
run $NEW/bench/mixed_latency
grep -E "rc=[1-9]|verified=no" "$b" | head
grep -h "progress_profile" "$b" | cut -c1-330 | tail -8
awk '/^### /{tag=($2 ~ /\/tmp\/base/) ? "BASE" : "NEW"; opt=$3" "$4; next} /^(tiny_tasks|chains|overhead|mixed_latency) /{print tag, opt, $0}' "$b" | sed -E 's/ (inputs|outputs|h2d_copies|rounds|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches)=[^ ]*//g' | cut -c1-250

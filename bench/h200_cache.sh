#!/bin/bash
# The H200 call of 2026-12-01 late (doc/results.md): the device block cache
# (device_cache) against the evening's tree. Builds .dev/convoy-base.tar.gz and
# .dev/convoy-new.tar.gz (make dist of each), runs the new tree's GPU tests, then base
# and new alternating with CONVOY_DEVICES=cuda: tiny_tasks with 4 background spinners
# (busy cores keep the host out of the state that makes tiny_tasks bimodal: see
# doc/results.md) and without, 1 KiB flows, malloc'd memory, with device_cache=0, the
# progress profile; overhead and mixed_latency without spinners (they use every core).
# Logs under $OUT; a table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=/tmp/cache
. "$(dirname "$0")/h200_build.sh"
h200_ab_setup "$w"
echo "### spinners: 4 busy loops from here" >>"$b"
h200_spin 4 75
for i in 1 2 3 4 5; do h200_run $BASE/bench/tiny_tasks; h200_run $NEW/bench/tiny_tasks; done
h200_run $NEW/bench/tiny_tasks --convoy-device_cache=0
for i in 1 2; do h200_run $BASE/bench/tiny_tasks --flow-bytes 1024; h200_run $NEW/bench/tiny_tasks --flow-bytes 1024; done
for i in 1 2; do h200_run $NEW/bench/tiny_tasks --host-memory malloc; h200_run $NEW/bench/tiny_tasks --host-memory pinned; done
h200_run $BASE/bench/tiny_tasks --convoy-progress_profile=1; h200_run $NEW/bench/tiny_tasks --convoy-progress_profile=1
wait
echo "### spinners: none from here" >>"$b"
for i in 1 2 3; do h200_run $BASE/bench/tiny_tasks; h200_run $NEW/bench/tiny_tasks; done
for i in 1 2; do h200_run $BASE/bench/overhead; h200_run $NEW/bench/overhead; done
for i in 1 2; do h200_run $BASE/bench/mixed_latency; h200_run $NEW/bench/mixed_latency; done
grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
awk '/^### spinners/{print; next} /^### /{tag=($0 ~ /\/base\//) ? "BASE" : "NEW"; opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^(tiny_tasks|overhead|mixed_latency) /{print tag, "[" opt "]", $0}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|d2d_copies|small|large_bytes|rounds|sched|tasks|split|page_faults|seconds)=[^ ]*//g' | cut -c1-200

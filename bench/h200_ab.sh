#!/bin/bash
# One H200 call comparing two trees (doc/results.md): builds .dev/convoy-base.tar.gz and
# .dev/convoy-new.tar.gz (make dist of each), runs the new tree's GPU tests unless
# GPU_TESTS=0, then base and new alternating with CONVOY_DEVICES=cuda: tiny_tasks (8 KiB
# and 1 KiB flows, the progress profile) with 4 background busy loops (busy cores keep the
# host out of the state that makes tiny_tasks bimodal: doc/results.md); overhead
# (independent, chained, 4 inserters), chains and mixed_latency without them (they use
# every core). ROUNDS (default 6) tiny_tasks pairs. Logs under $OUT; a table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=/tmp/ab
rounds=${ROUNDS:-6}
. "$(dirname "$0")/h200_build.sh"
h200_ab_setup "$w"
echo "### spinners: 4 busy loops from here" >>"$b"
h200_spin 4 $((rounds * 6 + 20))
for i in $(seq "$rounds"); do h200_run $BASE/bench/tiny_tasks; h200_run $NEW/bench/tiny_tasks; done
for i in 1 2; do h200_run $BASE/bench/tiny_tasks --flow-bytes 1024; h200_run $NEW/bench/tiny_tasks --flow-bytes 1024; done
h200_run $BASE/bench/tiny_tasks --convoy-progress_profile=1; h200_run $NEW/bench/tiny_tasks --convoy-progress_profile=1
wait
echo "### spinners: none from here" >>"$b"
for i in 1 2 3; do h200_run $BASE/bench/overhead; h200_run $NEW/bench/overhead; done
for i in 1 2; do h200_run $BASE/bench/chains; h200_run $NEW/bench/chains; done
for i in 1 2; do h200_run $BASE/bench/mixed_latency; h200_run $NEW/bench/mixed_latency; done
grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
awk '/^### spinners/{print; next} /^### /{tag=($0 ~ /\/base\//) ? "BASE" : "NEW"; opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^(tiny_tasks|overhead|chains|mixed_latency) /{print tag, "[" opt "]", $0} /progress_profile:/{print tag, substr($0, 1, 330)}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|d2d_copies|small|large_bytes|rounds|sched|tasks|split|page_faults|seconds|host_memory)=[^ ]*//g' | cut -c1-330

#!/bin/bash
# One H200 call on one tree (doc/results.md): .dev/convoy-new.tar.gz (make dist) built
# there; mixed_latency's baseline by batch_max_wait_us (50, the default; 20; 0) and by
# batch_max_tasks 32, 3 runs each; a traced run (--rounds 5) split into its steps by
# bench/mixed_latency_steps.py; then, with 4 busy loops beside (bench/h200_ab.sh says
# why), tiny_tasks by batch_max_wait_us and on malloc'd against pinned memory. Logs under
# $OUT; a table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=/tmp/lat
. "$(dirname "$0")/h200_build.sh"
h200_machine
h200_build new .dev/convoy-new.tar.gz "$w"
NEW=$(echo $w/new/convoy-*)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
for i in 1 2 3; do
    for o in "" --convoy-batch_max_wait_us=20 --convoy-batch_max_wait_us=0 --convoy-batch_max_tasks=32; do
        h200_run $NEW/bench/mixed_latency $o
    done
done
CONVOY_TRACE=$out/ml.json h200_run $NEW/bench/mixed_latency --rounds 5
python3 "$(dirname "$0")/mixed_latency_steps.py" "$out/ml.json" >"$out/ml-steps.txt" 2>&1
(cd "$out" && tar czf ml-trace.tar.gz ml.json && rm -f ml.json)
echo "### spinners: 4 busy loops from here" >>"$b"
h200_spin 4 60
for i in 1 2 3; do
    for o in "" --convoy-batch_max_wait_us=0 "--host-memory malloc"; do h200_run $NEW/bench/tiny_tasks $o; done
done
wait
grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
cat "$out/ml-steps.txt"
awk '/^### spinners/{print; next} /^### /{opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^(tiny_tasks|mixed_latency) /{print "[" opt "]", $0}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|d2d_copies|small|large_bytes|rounds|sched|tasks|split|page_faults|seconds|verified)=[^ ]*//g' | cut -c1-250

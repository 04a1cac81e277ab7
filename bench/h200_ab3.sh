#!/bin/bash
# Three trees alternating on the H200 (doc/results.md, 2026-12-01 night, calls 3 and 4):
# .dev/convoy-base.tar.gz, .dev/convoy-new.tar.gz and .dev/convoy-alt.tar.gz (a variant of
# new, to tell which change moved a figure). tiny_tasks with 4 busy loops beside it (see
# bench/h200_ab.sh), then bench/overhead. Call 3 ran 8 tiny_tasks rounds and also 2
# rounds of tiny_tasks --convoy-progress_profile=1 and of bench/chains; call 4 is this
# script as it stands. Logs under $OUT; a table last.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
w=/tmp/ab3
. bench/h200_build.sh
h200_build base .dev/convoy-base.tar.gz "$w" &
h200_build new .dev/convoy-new.tar.gz "$w" &
h200_build alt .dev/convoy-alt.tar.gz "$w" & wait
B=$(echo $w/base/convoy-*); N=$(echo $w/new/convoy-*); A=$(echo $w/alt/convoy-*)
export CONVOY_DEVICES=cuda
b="$out/bench.log"
echo "### spinners: 4 busy loops from here" >>"$b"
h200_spin 4 90
for i in 1 2 3 4 5 6 7 8 9 10; do h200_run $B/bench/tiny_tasks; h200_run $N/bench/tiny_tasks; h200_run $A/bench/tiny_tasks; done

wait
echo "### spinners: none from here" >>"$b"
for i in 1 2 3; do for t in $B $N $A; do h200_run $t/bench/overhead; done; done

grep -E "rc=[1-9]|verified=(no|0)" "$b" | head
awk '/^### spinners/{print; next} /^### /{tag=($0 ~ /\/base\//) ? "BASE" : ($0 ~ /\/alt\//) ? "ALT" : "NEW"; opt=$0; sub(/^### /,"",opt); sub(/[^ ]*\/bench\//,"",opt); next} /^(tiny_tasks|overhead|chains) /{print tag, "[" opt "]", $0} /progress_profile:.*65 rings/{n[tag]++; if (n[tag]%2==0) print tag, substr($0, 1, 330)}' "$b" |
    sed -E 's/ (inputs|outputs|h2d_copies|batch_chore|bytes_per_task|device|d2h_copies|h2d_submissions|d2h_submissions|launches|d2d_copies|small|large_bytes|rounds|sched|tasks|split|page_faults|seconds|host_memory|flow_bytes|d2h_bytes|final_bytes)=[^ ]*//g' | cut -c1-330
